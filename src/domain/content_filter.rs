//! Content filters: terms moderators keep that refuse a post, comment,
//! nickname or label name before it is stored, or hold a post for a
//! moderator. Matching is on a
//! normalised form of both the text and the terms, so that the obvious
//! evasions still match: compatibility forms (full-width letters, ligatures,
//! circled digits) folded by NFKC, case folded, combining marks and
//! zero-width or other invisible characters removed, and spaces and
//! punctuation between letters ignored ("s.p a-m" is "spam"). Every term is
//! matched at once by one Aho-Corasick automaton per action (a `reject`
//! term anywhere wins over a `hold` term before it), built when the list
//! changes, so a check costs time in the text's length, not the list's.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use serde::{Deserialize, Serialize};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

use super::{parse_text, text_schema};
use crate::error::AppError;

pub const MAX_FILTERS: usize = 10_000;
pub const MAX_TERM_CHARS: usize = 100;
pub const MAX_REASON_CHARS: usize = 200;

/// What a match does.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FilterAction {
    /// The write is refused with 422, naming the filter's public reason.
    Reject,
    /// A post is published to its author alone and waits in the
    /// moderation queue until a moderator approves it (`dismiss`). A
    /// comment, nickname or label name, which has no such state, is
    /// refused as by `reject`.
    Hold,
}

/// Characters that change nothing a reader sees: format characters
/// (zero-width space, joiners, marks of direction, the BOM), the soft
/// hyphen, variation selectors.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{E0000}'..='\u{E007F}')
}

/// Characters ignored between letters: whitespace and punctuation, ASCII
/// and CJK alike (after NFKC, full-width punctuation is ASCII).
fn separator(c: char) -> bool {
    c.is_whitespace()
        || c.is_ascii_punctuation()
        || matches!(c, '\u{2010}'..='\u{2027}' | '\u{2030}'..='\u{205E}' | '\u{3000}'..='\u{303F}'
            | '\u{00A1}'..='\u{00BF}' | '\u{FF61}'..='\u{FF65}' | '・')
}

/// A character whose normal form is known without the Unicode tables:
/// ASCII, full-width ASCII (NFKC maps it to ASCII), CJK ideographs (no
/// decomposition), and the ideographic space and full stops (separators
/// either way). Most posts are only these; a text with anything else
/// takes the full path.
fn plain(c: char) -> Option<Option<char>> {
    let ascii = |c: char| {
        let c = c.to_ascii_lowercase();
        (!separator(c) && !invisible(c)).then_some(c)
    };
    match c {
        _ if c.is_ascii() => Some(ascii(c)),
        '\u{4E00}'..='\u{9FFF}' | '\u{3400}'..='\u{4DBF}' => Some(Some(c)),
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).map(ascii),
        '\u{3000}'..='\u{3002}' => Some(None),
        _ => None,
    }
}

/// The form both texts and terms are matched in.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match plain(c) {
            Some(Some(kept)) => out.push(kept),
            Some(None) => {}
            None => return normalize_fully(text),
        }
    }
    out
}

/// `normalize` through the Unicode tables, for any text.
fn normalize_fully(text: &str) -> String {
    let stripped: String = text
        .nfkd()
        .filter(|c| !is_combining_mark(*c) && !invisible(*c))
        .collect();
    stripped
        .nfkc()
        .flat_map(char::to_lowercase)
        .filter(|c| !separator(*c) && !invisible(*c))
        .collect()
}

fn term_schema() -> utoipa::openapi::Object {
    text_schema(MAX_TERM_CHARS, true, false)
}
fn reason_schema() -> utoipa::openapi::Object {
    text_schema(MAX_REASON_CHARS, true, false)
}

/// The body of `POST /admin/filters` and `PUT /admin/filters/{id}`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContentFilterRequest {
    /// A word or phrase; matched in its normalised form, anywhere in the
    /// text.
    #[schema(schema_with = term_schema)]
    pub term: String,
    pub action: FilterAction,
    /// What a refused author is told (public: no internal notes).
    #[schema(schema_with = reason_schema)]
    pub reason: String,
}

/// A filter that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentFilterSpec {
    pub term: String,
    pub action: FilterAction,
    pub reason: String,
}

impl ContentFilterSpec {
    pub fn parse(req: ContentFilterRequest) -> Result<Self, AppError> {
        let term = parse_text("term", &req.term, MAX_TERM_CHARS, true)?;
        // Well-formed, so 422: no schema can say "a letter or digit once
        // normalised".
        if normalize(&term).is_empty() {
            return Err(AppError::unprocessable(
                "term",
                "must have a letter or digit: spaces, punctuation and invisible characters are ignored when matching",
            ));
        }
        let reason = parse_text("reason", &req.reason, MAX_REASON_CHARS, true)?;
        Ok(ContentFilterSpec {
            term,
            action: req.action,
            reason,
        })
    }
}

/// What matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterHit {
    pub id: i64,
    pub action: FilterAction,
    pub reason: String,
}

/// Every filter as one automaton per action over the normalised terms,
/// `reject`'s first.
#[derive(Debug, Default)]
pub struct FilterSet {
    by_action: Vec<ActionAutomaton>,
}

#[derive(Debug)]
struct ActionAutomaton {
    automaton: AhoCorasick,
    /// By pattern index.
    hits: Vec<FilterHit>,
}

impl FilterSet {
    /// Builds the set from `(id, term, action, reason)`; terms that
    /// normalise to nothing are left out.
    pub fn build(filters: impl IntoIterator<Item = (i64, String, FilterAction, String)>) -> Self {
        let mut groups: [(Vec<String>, Vec<FilterHit>); 2] = Default::default();
        for (id, term, action, reason) in filters {
            let term = normalize(&term);
            if term.is_empty() {
                continue;
            }
            let group = &mut groups[match action {
                FilterAction::Reject => 0,
                FilterAction::Hold => 1,
            }];
            group.0.push(term);
            group.1.push(FilterHit { id, action, reason });
        }
        let mut by_action = Vec::new();
        for (terms, hits) in groups {
            if terms.is_empty() {
                continue;
            }
            match AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostFirst)
                .build(&terms)
            {
                Ok(automaton) => by_action.push(ActionAutomaton { automaton, hits }),
                Err(e) => tracing::error!(
                    terms = terms.len(),
                    error = %e,
                    "content filters did not build; those of this action do not apply"
                ),
            }
        }
        FilterSet { by_action }
    }

    pub fn len(&self) -> usize {
        self.by_action.iter().map(|a| a.hits.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.by_action.is_empty()
    }

    /// The filter `text` matches, if any: the first `reject` one, else
    /// the first `hold` one.
    pub fn check(&self, text: &str) -> Option<&FilterHit> {
        if self.by_action.is_empty() {
            return None;
        }
        let normal = normalize(text);
        self.by_action.iter().find_map(|a| {
            let found = a.automaton.find(&normal)?;
            a.hits.get(found.pattern().as_usize())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(terms: &[&str]) -> FilterSet {
        FilterSet::build(terms.iter().enumerate().map(|(i, t)| {
            (
                i as i64 + 1,
                t.to_string(),
                FilterAction::Reject,
                format!("r{i}"),
            )
        }))
    }

    #[test]
    fn the_obvious_evasions_still_match() {
        let filters = set(&["spam", "加微信", "viagra"]);
        for evasion in [
            "buy SPAM now",
            "ｓｐａｍ",             // full-width
            "s p a m",              // spaces between letters
            "s.p-a_m",              // punctuation between letters
            "sp\u{200B}am",         // zero-width space
            "s\u{0301}pa\u{0308}m", // combining marks
            "ＳＰＡＭ",             // full-width capitals
            "加 微 信",
            "加\u{200D}微信",
            "v1agra tablets, VIAGRA",
        ] {
            assert!(
                filters.check(evasion).is_some(),
                "{evasion:?} was not caught"
            );
        }
        for clean in ["a fine day", "spa day", "微信支付"] {
            assert!(filters.check(clean).is_none(), "{clean:?} was caught");
        }
        assert_eq!(filters.check("ｖｉａｇｒａ").map(|h| h.id), Some(3));
    }

    #[test]
    fn the_quick_path_normalises_as_the_unicode_tables_do() {
        // Every character the quick path takes, alone and between letters.
        let quick: Vec<char> = (0u32..0x80)
            .chain(0xFF01..=0xFF5E)
            .chain(0x3000..=0x3002)
            .chain((0x4E00..=0x9FFF).step_by(97))
            .chain((0x3400..=0x4DBF).step_by(89))
            .filter_map(char::from_u32)
            .collect();
        for c in &quick {
            let text = format!("a{c}b{c}");
            assert_eq!(
                normalize(&text),
                normalize_fully(&text),
                "{c:?} (U+{:04X})",
                *c as u32
            );
        }
        let mixed: String = quick.iter().collect();
        assert_eq!(normalize(&mixed), normalize_fully(&mixed));
    }

    #[test]
    fn a_reject_term_wins_over_a_hold_term_before_it() {
        let filters = FilterSet::build([
            (
                1,
                "review".to_string(),
                FilterAction::Hold,
                "held".to_string(),
            ),
            (
                2,
                "spam".to_string(),
                FilterAction::Reject,
                "no".to_string(),
            ),
        ]);
        assert_eq!(filters.len(), 2);
        assert_eq!(
            filters.check("review this spam").map(|h| h.id),
            Some(2),
            "the later reject term decides"
        );
        assert_eq!(filters.check("please R E V I E W").map(|h| h.id), Some(1));
        assert!(filters.check("nothing here").is_none());
    }

    #[test]
    fn an_empty_set_matches_nothing_and_blank_terms_are_refused() {
        assert!(FilterSet::default().check("anything").is_none());
        assert!(set(&[" . "]).is_empty());
        let refused = ContentFilterSpec::parse(ContentFilterRequest {
            term: "\u{200B}..".into(),
            action: FilterAction::Reject,
            reason: "r".into(),
        });
        assert!(matches!(refused, Err(AppError::Unprocessable { field, .. }) if field == "term"));
    }
}
