//! Values that are valid by construction: each `parse` is where bad input dies,
//! naming the field, before anything reaches a store.

pub mod addr;
pub mod calendar;
pub mod comment;
pub mod content_filter;
pub mod cursor;
pub mod device_models;
pub mod instance;
pub mod label;
pub mod lang;
pub mod media;
pub mod people_csv;
pub mod post;
pub mod report;
pub mod search_query;
pub mod search_text;
pub mod share;
pub mod time_text;
pub mod user;

use crate::error::AppError;

/// Counts characters as users see them (Unicode scalar values), so an emoji
/// is one character, not four bytes.
pub(crate) fn char_len(s: &str) -> usize {
    s.chars().count()
}

// The rules below are stated twice, as code and as a regular expression for
// the OpenAPI document, because generated clients and contract checkers read
// the document: the tests hold each pair to the same answers.

/// Any text without control characters other than line breaks and tabs:
/// they break clients' layouts and logs and are never typed on purpose.
pub const TEXT_PATTERN: &str = r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*$";

/// `TEXT_PATTERN` with at least one character that is not whitespace: a
/// name or a comment that a reader can see.
pub const VISIBLE_TEXT_PATTERN: &str = concat!(
    r"^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*",
    r"[^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]",
    r"[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]*$"
);

/// An http(s) URL: a host (and port), then any path, query or fragment, no
/// whitespace or control character anywhere. The host part has no `@` (no
/// credentials in a picture's URL, nor `trusted.example@evil.example`) and
/// no brackets or backslash (IPv6 literals and Windows paths are no CDN's,
/// and clients' URL parsers reject their malformed forms outright).
/// Unanchored, so that both patterns below are made of it.
macro_rules! http_url {
    () => {
        concat!(
            r"https?://",
            r"[^/?#@\[\]\\\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+",
            r"([/?#][^\u0000-\u0020\u007F-\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*)?"
        )
    };
}
pub const HTTP_URL_PATTERN: &str = concat!("^", http_url!(), "$");
/// `HTTP_URL_PATTERN` or the empty string.
pub const HTTP_URL_OR_EMPTY_PATTERN: &str = concat!("^(", http_url!(), ")?$");

/// Longest URL accepted, in characters.
pub const MAX_URL_CHARS: usize = 2048;

/// The document's schema for a free-text field `parse_text` checks; `null`
/// is allowed where the field is optional (serde reads it as absent).
pub fn text_schema(max: usize, visible: bool, nullable: bool) -> utoipa::openapi::Object {
    let pattern = if visible {
        VISIBLE_TEXT_PATTERN
    } else {
        TEXT_PATTERN
    };
    StringSchema {
        pattern: Some(pattern.into()),
        max: Some(max),
        nullable,
        ..Default::default()
    }
    .build()
}

/// The document's schema for a URL `parse_http_url` accepts (or, with
/// `empty_ok`, the empty string that clears one).
pub fn url_schema(empty_ok: bool, nullable: bool) -> utoipa::openapi::Object {
    let pattern = if empty_ok {
        HTTP_URL_OR_EMPTY_PATTERN
    } else {
        HTTP_URL_PATTERN
    };
    StringSchema {
        pattern: Some(pattern.into()),
        max: Some(MAX_URL_CHARS),
        nullable,
        ..Default::default()
    }
    .build()
}

/// A string's schema in the document: the one way every text parameter,
/// field and header states its bounds.
#[derive(Default)]
pub struct StringSchema {
    pub pattern: Option<String>,
    pub min: Option<usize>,
    pub max: Option<usize>,
    /// `null` allowed too: an optional field serde reads as absent.
    pub nullable: bool,
    pub description: Option<String>,
}

impl StringSchema {
    pub fn build(self) -> utoipa::openapi::Object {
        use utoipa::openapi::schema::{SchemaType, Type};
        let kind = if self.nullable {
            SchemaType::from_iter([Type::String, Type::Null])
        } else {
            SchemaType::from(Type::String)
        };
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(kind)
            .min_length(self.min)
            .max_length(self.max)
            .pattern(self.pattern)
            .description(self.description)
            .build()
    }
}

/// Reads an optional id in a body. JSON has one number type, and the
/// document's `integer` admits `12.0`; so does this, where serde's `i64`
/// would not. Fractions, and floats beyond 2^53 (where they stop being
/// exact), are refused.
pub fn optional_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    optional_whole_number(d)
}

/// Reads an optional whole number in a body (`3` or `3.0`), as
/// `optional_id` reads an id.
pub fn optional_whole_number<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<i64>, D::Error> {
    use serde::de::Error;
    let Some(n) = <Option<serde_json::Number> as serde::Deserialize>::deserialize(d)? else {
        return Ok(None);
    };
    whole_number(&n).map(Some).map_err(D::Error::custom)
}

/// Reads a whole number in a body (`3` or `3.0`), as `optional_id` reads
/// an id.
pub fn whole_number_field<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    use serde::de::Error;
    let n = <serde_json::Number as serde::Deserialize>::deserialize(d)?;
    whole_number(&n).map_err(D::Error::custom)
}

/// An array of at most `max` ids (positive int64), as `id_list` reads them.
pub fn id_array_schema(max: usize) -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(
            utoipa::openapi::ObjectBuilder::new()
                .schema_type(utoipa::openapi::schema::Type::Integer)
                .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                    utoipa::openapi::KnownFormat::Int64,
                )))
                .minimum(Some(1)),
        )
        .max_items(Some(max))
        .build()
}

/// Reads a list of ids in a body, each as `optional_id` reads one.
pub fn id_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<i64>, D::Error> {
    use serde::de::Error;
    <Vec<serde_json::Number> as serde::Deserialize>::deserialize(d)?
        .iter()
        .map(|n| whole_number(n).map_err(D::Error::custom))
        .collect()
}

fn whole_number(n: &serde_json::Number) -> Result<i64, String> {
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 => Ok(f as i64),
        _ => Err(format!("{n} is not a whole number")),
    }
}

fn is_stray_control(c: char) -> bool {
    c.is_control() && !matches!(c, '\n' | '\r' | '\t')
}

fn is_blank(c: char) -> bool {
    c.is_whitespace() || c.is_control()
}

/// Rejects control characters other than line breaks and tabs (`TEXT_PATTERN`).
pub(crate) fn check_text(field: &str, s: &str) -> Result<(), AppError> {
    if s.chars().any(is_stray_control) {
        return Err(AppError::invalid(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

/// Free text of at most `max` characters as sent (surrounding whitespace
/// counts, as the document's `maxLength` does), returned trimmed. With
/// `visible`, it must have something besides whitespace (`VISIBLE_TEXT_PATTERN`).
pub(crate) fn parse_text(
    field: &str,
    raw: &str,
    max: usize,
    visible: bool,
) -> Result<String, AppError> {
    if char_len(raw) > max {
        return Err(AppError::invalid(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    check_text(field, raw)?;
    if visible && raw.chars().all(is_blank) {
        return Err(AppError::invalid(field, "must not be blank"));
    }
    Ok(raw.trim().to_string())
}

/// An http(s) URL with a host and no whitespace (`HTTP_URL_PATTERN`): the
/// only kind a client can load.
pub(crate) fn parse_http_url(field: &str, s: &str) -> Result<String, AppError> {
    if char_len(s) > MAX_URL_CHARS {
        return Err(AppError::invalid(
            field,
            format!("must be at most {MAX_URL_CHARS} characters"),
        ));
    }
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
        .ok_or_else(|| AppError::invalid(field, "must be an http or https URL"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.contains(['@', '[', ']', '\\']) || s.chars().any(is_blank) {
        return Err(AppError::invalid(
            field,
            "must be an http or https URL with a plain host (no @, brackets or \\), without spaces",
        ));
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_need_http_scheme_and_host() {
        assert!(parse_http_url("u", "https://cdn/a.jpg").is_ok());
        assert!(parse_http_url("u", "http://x.y/z?q=1").is_ok());
        for bad in [
            "ftp://x/y",
            "https://",
            "javascript:alert(1)",
            "https:// x",
            "https:///a",
            " https://x/a",
            "https://cdn.example@evil.example/a.jpg",
            "http://[::1]/a",
            "http://[",
        ] {
            assert!(parse_http_url("u", bad).is_err(), "{bad}");
        }
        assert!(parse_http_url("u", &format!("https://x/{}", "a".repeat(MAX_URL_CHARS))).is_err());
    }

    /// Every string of up to three characters from an alphabet of the edge
    /// cases (each control range's ends, each kind of Unicode space, and
    /// look-alikes that are neither), alone and behind a URL's scheme.
    fn edge_strings() -> Vec<String> {
        let alphabet = [
            'a', '字', '😀', ' ', '\t', '\n', '\r', '\u{0}', '\u{8}', '\u{b}', '\u{c}', '\u{e}',
            '\u{1f}', '\u{7f}', '\u{85}', '\u{9f}', '\u{a0}', '\u{1680}', '\u{2000}', '\u{200a}',
            '\u{200b}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}', '\u{feff}',
            '/', '?', '#', '@', '[', ']', '\\',
        ];
        let mut out = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..3 {
            last = last
                .iter()
                .flat_map(|p| alphabet.iter().map(move |c| format!("{p}{c}")))
                .collect();
            out.extend(last.iter().cloned());
        }
        let urls: Vec<String> = out
            .iter()
            .flat_map(|s| [format!("https://{s}"), format!("http://x{s}")])
            .collect();
        out.extend(urls);
        out
    }

    #[test]
    fn the_documented_patterns_and_the_parsers_agree() {
        let text = regex::Regex::new(TEXT_PATTERN).unwrap();
        let visible = regex::Regex::new(VISIBLE_TEXT_PATTERN).unwrap();
        let url = regex::Regex::new(HTTP_URL_PATTERN).unwrap();
        let url_or_empty = regex::Regex::new(HTTP_URL_OR_EMPTY_PATTERN).unwrap();
        for s in edge_strings() {
            assert_eq!(text.is_match(&s), check_text("f", &s).is_ok(), "text {s:?}");
            assert_eq!(
                visible.is_match(&s),
                parse_text("f", &s, 100, true).is_ok(),
                "visible text {s:?}"
            );
            assert_eq!(
                url.is_match(&s),
                parse_http_url("f", &s).is_ok(),
                "url {s:?}"
            );
            assert_eq!(
                url_or_empty.is_match(&s),
                s.is_empty() || parse_http_url("f", &s).is_ok(),
                "url or empty {s:?}"
            );
        }
    }

    #[test]
    fn ids_may_be_written_as_whole_floats() {
        #[derive(serde::Deserialize)]
        struct Body {
            #[serde(default, deserialize_with = "optional_id")]
            id: Option<i64>,
        }
        let id = |json: &str| serde_json::from_str::<Body>(json).map(|b| b.id);
        assert_eq!(id(r#"{"id": 12}"#).unwrap(), Some(12));
        assert_eq!(id(r#"{"id": 12.0}"#).unwrap(), Some(12));
        assert_eq!(id(r#"{"id": null}"#).unwrap(), None);
        assert_eq!(id("{}").unwrap(), None);
        for bad in [r#"{"id": 1.5}"#, r#"{"id": 1e300}"#, r#"{"id": "12"}"#] {
            assert!(id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn text_is_measured_as_sent_and_stored_trimmed() {
        assert_eq!(parse_text("f", "  hi ", 5, true).unwrap(), "hi");
        assert!(parse_text("f", "  hi  ", 5, true).is_err());
        assert!(parse_text("f", " \u{3000}", 5, true).is_err());
        assert_eq!(parse_text("f", " ", 5, false).unwrap(), "");
    }

    #[test]
    fn emoji_count_as_one_character() {
        assert_eq!(char_len("😀👍"), 2);
        assert!(check_text("c", "hi\n😀").is_ok());
        assert!(check_text("c", "hi\u{0}").is_err());
    }
}
