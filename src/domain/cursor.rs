//! Keyset paging. A cursor is the last id a page showed, written in base 36
//! behind a version letter so clients treat it as opaque. Keyset, not
//! skip/limit: an item inserted while a client pages shifts no page, so it
//! never sees a duplicate or misses an older item.

use crate::error::AppError;

pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 100;

/// What `Cursor::parse` accepts, for the OpenAPI document: twelve base-36
/// digits cover every positive `i64` id this service mints (below 36^12),
/// so any string of this shape is a cursor, and none other is. Empty is
/// the first page.
pub const CURSOR_PATTERN: &str = "^(v[0-9a-z]{1,12})?$";

/// What `HotCursor::parse` accepts besides `CURSOR_PATTERN`'s, for the
/// comments in hot order: the last comment's likes peak and id.
pub const COMMENTS_CURSOR_PATTERN: &str = "^(v[0-9a-z]{1,12}|h[0-9a-z]{1,12}\\.[0-9a-z]{1,12})?$";

/// What a search's cursor may be: a post's (`CURSOR_PATTERN`), or a
/// person's found by name (`NameCursor`): the name's bytes in hex, at most
/// `MAX_NAME_KEY_BYTES` of them, and the uid.
///
/// A score's eight hex digits are the bits of a finite, non-negative
/// `f32` (`00000000` to `7f7fffff`), the only scores there are.
pub const SEARCH_CURSOR_PATTERN: &str = "^(v[0-9a-z]{1,12}|n([0-9a-f]{2}){0,512}\\.[0-9a-z]{1,12}|s([0-6][0-9a-f]{7}|7[0-9a-e][0-9a-f]{6}|7f[0-7][0-9a-f]{5})\\.[0-9a-z]{1,12})?$";

/// The longest name key a cursor carries (`search_text::name_key` keeps
/// to it).
pub const MAX_NAME_KEY_BYTES: usize = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor(pub i64);

/// A page of people found by name ends at the last one's (name, uid): the
/// next page is what sorts after it. The position itself, not the account:
/// a cursor made up by hand names a place in the order, and tells nothing
/// of anyone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameCursor {
    pub name: String,
    pub uid: i64,
}

/// A search's cursor: of posts newest first, of posts by relevance, or of
/// people, told apart by its letter.
#[derive(Debug, Clone, PartialEq)]
pub enum SearchCursor {
    Post(Cursor),
    Scored(ScoreCursor),
    Name(NameCursor),
}

impl SearchCursor {
    pub fn parse(raw: &str) -> Result<Self, AppError> {
        match raw.as_bytes().first() {
            Some(b'n') => NameCursor::parse(raw).map(SearchCursor::Name),
            Some(b's') => ScoreCursor::parse(raw).map(SearchCursor::Scored),
            _ => Cursor::parse(raw).map(SearchCursor::Post),
        }
    }
}

/// A page of posts by relevance ends at the last one's (score, id): the
/// next page is what ranks below it, score first, then the newer first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreCursor {
    pub score: f32,
    pub id: i64,
}

impl ScoreCursor {
    pub fn encode(score: f32, id: i64) -> String {
        format!("s{:08x}.{}", score.to_bits(), base36(id))
    }

    pub fn parse(raw: &str) -> Result<Self, AppError> {
        let bad = || AppError::invalid("cursor", "is not a cursor this service issued");
        let (bits, id) = raw
            .strip_prefix('s')
            .and_then(|r| r.split_once('.'))
            .ok_or_else(bad)?;
        if bits.len() != 8 || !bits.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(bad());
        }
        let score = f32::from_bits(u32::from_str_radix(bits, 16).map_err(|_| bad())?);
        // Scores are finite and not negative: no other was ever issued.
        if !score.is_finite() || score.is_sign_negative() {
            return Err(bad());
        }
        Ok(ScoreCursor {
            score,
            id: from_base36(id).ok_or_else(bad)?,
        })
    }

    /// Whether a hit of `score` and `id` ranks after this cursor's.
    pub fn is_before(&self, score: f32, id: i64) -> bool {
        score.total_cmp(&self.score).then(id.cmp(&self.id)).is_lt()
    }
}

impl NameCursor {
    pub fn encode(name: &str, uid: i64) -> String {
        use std::fmt::Write as _;
        let mut out = String::with_capacity(2 + name.len() * 2 + 13);
        out.push('n');
        for b in name.bytes().take(MAX_NAME_KEY_BYTES) {
            let _ = write!(out, "{b:02x}");
        }
        out.push('.');
        out.push_str(&base36(uid));
        out
    }

    pub fn parse(raw: &str) -> Result<Self, AppError> {
        let bad = || AppError::invalid("cursor", "is not a cursor this service issued");
        let (hex, uid) = raw
            .strip_prefix('n')
            .and_then(|r| r.split_once('.'))
            .ok_or_else(bad)?;
        if hex.len() % 2 != 0
            || hex.len() > 2 * MAX_NAME_KEY_BYTES
            || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            return Err(bad());
        }
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("x"), 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| bad())?;
        Ok(NameCursor {
            // Bytes that are no UTF-8 (a cursor not from here) still name
            // a place in the order.
            name: String::from_utf8_lossy(&bytes).into_owned(),
            uid: from_base36(uid).ok_or_else(bad)?,
        })
    }
}

fn base36(n: i64) -> String {
    let mut n = n.max(0) as u64;
    let mut digits = Vec::new();
    loop {
        digits.push(std::char::from_digit((n % 36) as u32, 36).unwrap_or('0'));
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.into_iter().rev().collect()
}

fn from_base36(s: &str) -> Option<i64> {
    if s.is_empty()
        || s.len() > 12
        || !s
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
    {
        return None;
    }
    i64::try_from(u64::from_str_radix(s, 36).ok()?).ok()
}

/// A page of comments in hot order ends at the last one's (likes peak, id):
/// the next page is what ranks below it. The peak never falls, so a comment
/// shown once never ranks below a later page's start: no duplicates however
/// the likes change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HotCursor {
    pub peak: i64,
    pub id: i64,
}

impl HotCursor {
    pub fn encode((peak, id): (i64, i64)) -> String {
        format!("h{}.{}", base36(peak), base36(id))
    }

    pub fn parse(raw: &str) -> Result<Self, AppError> {
        let bad = || AppError::invalid("cursor", "is not a cursor this service issued");
        let (peak, id) = raw
            .strip_prefix('h')
            .and_then(|r| r.split_once('.'))
            .ok_or_else(bad)?;
        Ok(HotCursor {
            peak: from_base36(peak).ok_or_else(bad)?,
            id: from_base36(id).ok_or_else(bad)?,
        })
    }
}

impl Cursor {
    pub fn encode(id: i64) -> String {
        let mut n = id as u64;
        let mut digits = Vec::new();
        while n > 0 {
            digits.push(std::char::from_digit((n % 36) as u32, 36).unwrap_or('0'));
            n /= 36;
        }
        digits.reverse();
        format!("v{}", digits.into_iter().collect::<String>())
    }

    pub fn parse(raw: &str) -> Result<Self, AppError> {
        let bad = || AppError::invalid("cursor", "is not a cursor this service issued");
        let body = raw.strip_prefix('v').ok_or_else(bad)?;
        if body.is_empty()
            || body.len() > 12
            || !body
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
        {
            return Err(bad());
        }
        // 12 base-36 digits are below 2^63: no overflow, every one an id.
        let n = u64::from_str_radix(body, 36).map_err(|_| bad())?;
        i64::try_from(n).map(Cursor).map_err(|_| bad())
    }
}

/// Cuts a keyset query's answer into a page. The query asked for `limit + 1`
/// items: an extra one means there is a next page, which starts after the
/// last item shown.
pub fn paginate<T>(
    mut items: Vec<T>,
    limit: usize,
    id_of: impl Fn(&T) -> i64,
) -> (Vec<T>, Option<String>) {
    let more = items.len() > limit;
    items.truncate(limit);
    let next = if more {
        items.last().map(|t| Cursor::encode(id_of(t)))
    } else {
        None
    };
    (items, next)
}

/// A page size: 1 to 100, default 20. Digits only (no sign, no spaces), as
/// the document's integer says.
pub fn parse_limit(raw: Option<&str>) -> Result<usize, AppError> {
    let bad = || AppError::invalid("limit", "must be a whole number from 1 to 100");
    match raw {
        None => Ok(DEFAULT_LIMIT),
        Some(s) if s.is_empty() || s.len() > 3 || !s.bytes().all(|b| b.is_ascii_digit()) => {
            Err(bad())
        }
        Some(s) => match s.parse::<usize>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
            _ => Err(bad()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip() {
        for id in [1_000_000_000_000_001i64, 5_503_599_627_370_495, 1] {
            assert_eq!(Cursor::parse(&Cursor::encode(id)).unwrap(), Cursor(id));
        }
    }

    #[test]
    fn foreign_cursors_are_invalid_input() {
        for bad in [
            "",
            "v",
            "123",
            "v!!",
            "vzzzzzzzzzzzzzzz",
            "vABC",
            "vzzzzzzzzzzzzz",
            "v+1",
        ] {
            assert!(Cursor::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_string_of_the_documented_shape_is_a_cursor() {
        let shape = regex::Regex::new(CURSOR_PATTERN).unwrap();
        for raw in [
            "vzzzzzzzzzzzz",
            "v0",
            "v1",
            "vzzzzzzzzzzzzz",
            "vZ",
            "x1",
            "v-1",
        ] {
            let shaped = shape.is_match(raw) && !raw.is_empty();
            assert_eq!(shaped, Cursor::parse(raw).is_ok(), "{raw}");
        }
    }

    #[test]
    fn name_cursors_read_back_and_match_the_documented_shape() {
        for (name, uid) in [("", 1), ("zhang wei", 1_247_677_933_998_080), ("张三", 7)] {
            let raw = NameCursor::encode(name, uid);
            let at = NameCursor::parse(&raw).unwrap();
            assert_eq!((at.name.as_str(), at.uid), (name, uid), "{raw}");
        }
        let shape = regex::Regex::new(SEARCH_CURSOR_PATTERN).unwrap();
        let longest = format!("n{}.1", "ff".repeat(MAX_NAME_KEY_BYTES));
        let too_long = format!("n{}.1", "ff".repeat(MAX_NAME_KEY_BYTES + 1));
        for raw in [
            "n.1",
            "n7a68.zz",
            "nff.1",
            longest.as_str(),
            too_long.as_str(),
            "n7.1",
            "n7a68",
            "n7A.1",
            "nzz.1",
            "n7a.",
            "v1",
            "x1",
        ] {
            let either = NameCursor::parse(raw).is_ok() || Cursor::parse(raw).is_ok();
            assert_eq!(shape.is_match(raw), either, "{raw}");
        }
    }

    #[test]
    fn score_cursors_read_back_rank_and_match_the_documented_shape() {
        for (score, id) in [(0.0, 1), (7.25, 1_247_677_933_998_080), (f32::MAX, 7)] {
            let at = ScoreCursor::parse(&ScoreCursor::encode(score, id)).unwrap();
            assert_eq!((at.score, at.id), (score, id));
        }
        let at = ScoreCursor { score: 2.0, id: 10 };
        assert!(at.is_before(1.5, 99), "a lower score ranks after");
        assert!(
            at.is_before(2.0, 9),
            "an older post of the same score ranks after"
        );
        assert!(!at.is_before(2.0, 10) && !at.is_before(2.0, 11) && !at.is_before(2.5, 1));
        let shape = regex::Regex::new(SEARCH_CURSOR_PATTERN).unwrap();
        for raw in [
            "s40e80000.a",
            "s00000000.1",
            "s4.1",
            "s40E80000.1",
            "s40e80000.",
            "s40e800000.1",
        ] {
            let any = SearchCursor::parse(raw).is_ok();
            assert_eq!(shape.is_match(raw), any, "{raw}");
        }
        // No score this service gives, and not of the shape either: NaN,
        // an infinity, a negative one; the largest finite one is.
        assert!(shape.is_match("s7f7fffff.1") && ScoreCursor::parse("s7f7fffff.1").is_ok());
        for raw in ["s7fc00000.1", "s7f800000.1", "sbf800000.1", "s80000000.1"] {
            assert!(
                !shape.is_match(raw) && ScoreCursor::parse(raw).is_err(),
                "{raw}"
            );
        }
    }

    #[test]
    fn hot_cursors_read_back_and_match_the_documented_shape() {
        for key in [(0, 0), (3, 1_247_677_933_998_080), (1_000_000_000, 1)] {
            let raw = HotCursor::encode(key);
            let at = HotCursor::parse(&raw).unwrap();
            assert_eq!((at.peak, at.id), key, "{raw}");
        }
        let shape = regex::Regex::new(COMMENTS_CURSOR_PATTERN).unwrap();
        for raw in [
            "h0.0",
            "h1.2",
            "hzzzzzzzzzzzz.1",
            "h1",
            "h.1",
            "h1.",
            "hZ.1",
            "h1.2.3",
            "v1",
        ] {
            let either = HotCursor::parse(raw).is_ok() || Cursor::parse(raw).is_ok();
            assert_eq!(shape.is_match(raw), either, "{raw}");
        }
    }

    #[test]
    fn a_page_has_a_next_cursor_only_when_more_items_exist() {
        let (items, next) = paginate(vec![9, 8, 7], 2, |i| *i);
        assert_eq!(items, vec![9, 8]);
        assert_eq!(next.map(|c| Cursor::parse(&c).unwrap()), Some(Cursor(8)));
        let (items, next) = paginate(vec![9, 8], 2, |i| *i);
        assert_eq!((items.len(), next), (2, None));
    }

    #[test]
    fn limits() {
        assert_eq!(parse_limit(None).unwrap(), 20);
        assert_eq!(parse_limit(Some("100")).unwrap(), 100);
        assert!(parse_limit(Some("0")).is_err());
        assert!(parse_limit(Some("101")).is_err());
        assert!(parse_limit(Some("ten")).is_err());
        for bad in ["+5", " 5", "5 ", "", "0100"] {
            assert!(parse_limit(Some(bad)).is_err(), "{bad:?}");
        }
        assert_eq!(parse_limit(Some("007")).unwrap(), 7);
    }
}
