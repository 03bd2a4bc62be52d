//! A search as a reader types it (`q`): words, and the filters `from:`,
//! `since:`, `until:` and `has:media`, checked and bounded before any
//! index is asked. Too long is a 400 (the schema says so); a query of the
//! right length that asks for nothing, too much or a day that is not one
//! is a 422: only the words' cutting can tell.

use super::calendar::{day_start, DAY};
use super::search_text::{terms, Cut};
use crate::error::AppError;

/// Characters a query may have.
pub const MAX_QUERY_CHARS: usize = 200;
/// Words a query may look for, after cutting: each is a lookup in the
/// index, and every hit must hold all of them.
pub const MAX_QUERY_TERMS: usize = 12;

/// What a post search asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PostQuery {
    /// The folded words every hit holds (`search_text::terms`), each once.
    pub terms: Vec<String>,
    /// `from:username`: only this author's posts (the name as typed; the
    /// service finds the account).
    pub from: Option<String>,
    /// `since:YYYY-MM-DD`: posted on or after the start of that day (UTC),
    /// epoch ms.
    pub since: Option<i64>,
    /// `until:YYYY-MM-DD`: posted before the end of that day (UTC), epoch
    /// ms (exclusive).
    pub until: Option<i64>,
    /// `has:media`: only posts with uploaded pictures.
    pub has_media: bool,
}

impl PostQuery {
    pub fn parse(q: &str) -> Result<Self, AppError> {
        if q.is_empty() {
            return Err(AppError::invalid("q", "is required"));
        }
        if super::char_len(q) > MAX_QUERY_CHARS {
            return Err(AppError::invalid(
                "q",
                format!("at most {MAX_QUERY_CHARS} characters"),
            ));
        }
        let q = q.trim();
        let mut query = PostQuery::default();
        let mut words = String::new();
        for part in q.split_whitespace() {
            let Some((op, value)) = part.split_once(':') else {
                words.push_str(part);
                words.push(' ');
                continue;
            };
            match op.to_ascii_lowercase().as_str() {
                "from" => {
                    let name = value.strip_prefix('@').unwrap_or(value);
                    if name.is_empty() || query.from.is_some() {
                        return Err(AppError::unprocessable("q", "from: names one username"));
                    }
                    query.from = Some(name.to_string());
                }
                "since" | "until" => {
                    let day = day_start(value).ok_or_else(|| {
                        AppError::unprocessable("q", format!("{op}: takes a date, YYYY-MM-DD"))
                    })?;
                    let slot = if op.eq_ignore_ascii_case("since") {
                        &mut query.since
                    } else {
                        &mut query.until
                    };
                    if slot.is_some() {
                        return Err(AppError::unprocessable("q", format!("{op}: given twice")));
                    }
                    *slot = Some(if op.eq_ignore_ascii_case("since") {
                        day
                    } else {
                        day + DAY
                    });
                }
                "has" if value.eq_ignore_ascii_case("media") => query.has_media = true,
                "has" => return Err(AppError::unprocessable("q", "has: takes media")),
                // Not a filter (a time, a URL): words like the rest.
                _ => {
                    words.push_str(part);
                    words.push(' ');
                }
            }
        }
        for term in terms(&words, Cut::Querying) {
            if !query.terms.contains(&term.text) {
                query.terms.push(term.text);
            }
        }
        if query.terms.len() > MAX_QUERY_TERMS {
            return Err(AppError::unprocessable(
                "q",
                format!("at most {MAX_QUERY_TERMS} words"),
            ));
        }
        if query.terms.is_empty() && query.from.is_none() {
            return Err(AppError::unprocessable(
                "q",
                "give a word to look for, or from: an author",
            ));
        }
        if let (Some(since), Some(until)) = (query.since, query.until) {
            if since >= until {
                return Err(AppError::unprocessable(
                    "q",
                    "since: must come before until:",
                ));
            }
        }
        Ok(query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_filters_are_read_apart() {
        let q = PostQuery::parse("西湖 划船 from:@ann since:2026-05-01 until:2026-05-31 has:media")
            .unwrap();
        assert_eq!(q.terms, ["西湖", "划船"]);
        assert_eq!(q.from.as_deref(), Some("ann"));
        assert_eq!(q.since, day_start("2026-05-01"));
        assert_eq!(q.until, day_start("2026-06-01"));
        assert!(q.has_media);
        let q = PostQuery::parse("Running runs at 10:30").unwrap();
        assert_eq!(q.terms, ["run", "at", "10", "30"]);
        assert_eq!(
            PostQuery::parse("from:bob").unwrap().terms,
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_query_that_asks_too_much_or_nothing_is_refused() {
        let long = "a".repeat(MAX_QUERY_CHARS + 1);
        let many = (0..=MAX_QUERY_TERMS)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        for bad in [
            "",
            "   ",
            "🎉 ！！",
            long.as_str(),
            many.as_str(),
            "cats since:yesterday",
            "cats since:2026-02-30",
            "cats has:links",
            "cats from:",
            "from:ann from:bob",
            "cats since:2026-01-01 since:2026-02-01",
            "cats since:2026-06-01 until:2026-05-01",
        ] {
            assert!(PostQuery::parse(bad).is_err(), "{bad:?}");
        }
    }
}
