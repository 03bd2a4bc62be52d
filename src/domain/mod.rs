//! Values that are valid by construction: each `parse` is where bad input dies,
//! naming the field, before anything reaches a store.

pub mod addr;
pub mod comment;
pub mod cursor;
pub mod device;
pub mod post;
pub mod time_text;
pub mod user;

use crate::error::AppError;

/// Counts characters as users see them (Unicode scalar values), so an emoji
/// is one character, not four bytes.
pub(crate) fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// Rejects control characters other than line breaks and tabs: they break
/// clients' layouts and logs and are never typed on purpose.
pub(crate) fn check_text(field: &str, s: &str) -> Result<(), AppError> {
    if s.chars()
        .any(|c| c.is_control() && c != '\n' && c != '\r' && c != '\t')
    {
        return Err(AppError::invalid(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

/// An http(s) URL with a host and no whitespace: the only kind a client can load.
pub(crate) fn parse_http_url(field: &str, s: &str, max: usize) -> Result<String, AppError> {
    let s = s.trim();
    if s.len() > max {
        return Err(AppError::invalid(
            field,
            format!("must be at most {max} characters"),
        ));
    }
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
        .ok_or_else(|| AppError::invalid(field, "must be an http or https URL"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(AppError::invalid(
            field,
            "must be an http or https URL with a host",
        ));
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_need_http_scheme_and_host() {
        assert!(parse_http_url("u", "https://cdn/a.jpg", 100).is_ok());
        assert!(parse_http_url("u", "http://x.y/z?q=1", 100).is_ok());
        for bad in [
            "ftp://x/y",
            "https://",
            "javascript:alert(1)",
            "https:// x",
            "https:///a",
        ] {
            assert!(parse_http_url("u", bad, 100).is_err(), "{bad}");
        }
        assert!(parse_http_url("u", &format!("https://x/{}", "a".repeat(100)), 100).is_err());
    }

    #[test]
    fn emoji_count_as_one_character() {
        assert_eq!(char_len("😀👍"), 2);
        assert!(check_text("c", "hi\n😀").is_ok());
        assert!(check_text("c", "hi\u{0}").is_err());
    }
}
