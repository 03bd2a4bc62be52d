//! Account fields: usernames are the login key, nick names and avatars are what others see.

use super::{char_len, check_text, parse_http_url};
use crate::error::AppError;

/// Lower-case ASCII letters, digits, `_`, `.` and `-`, 3 to 32 long: safe in
/// URLs and unambiguous to type. Input is lower-cased, so `Alice` is `alice`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Username(String);

impl Username {
    pub fn parse(raw: &str) -> Result<Self, AppError> {
        let s = raw.trim().to_lowercase();
        let len = s.len();
        if !(3..=32).contains(&len) {
            return Err(AppError::invalid("username", "must be 3 to 32 characters"));
        }
        if !s
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-'))
        {
            return Err(AppError::invalid(
                "username",
                "may contain only letters, digits, '_', '.' and '-'",
            ));
        }
        Ok(Self(s))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// 8 to 128 characters; anything else is the user's business.
pub struct Password(String);

impl Password {
    pub const MAX_CHARS: usize = 128;

    pub fn parse(raw: &str) -> Result<Self, AppError> {
        let n = char_len(raw);
        if !(8..=Self::MAX_CHARS).contains(&n) {
            return Err(AppError::invalid("password", "must be 8 to 128 characters"));
        }
        Ok(Self(raw.to_string()))
    }

    /// What a sign-in checks before hashing: no password is longer than
    /// this, so a longer one is refused without spending a hash on it.
    pub fn check_length(raw: &str) -> Result<(), AppError> {
        // Bytes first: a 64 KiB body is not walked char by char.
        if raw.len() > Self::MAX_CHARS * 4 || char_len(raw) > Self::MAX_CHARS {
            return Err(AppError::invalid(
                "password",
                "must be at most 128 characters",
            ));
        }
        Ok(())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// The name others see: 1 to 32 characters, any script, emoji welcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NickName(String);

impl NickName {
    pub fn parse(raw: &str) -> Result<Self, AppError> {
        let s = raw.trim();
        if !(1..=32).contains(&char_len(s)) {
            return Err(AppError::invalid("nickName", "must be 1 to 32 characters"));
        }
        check_text("nickName", s)?;
        Ok(Self(s.to_string()))
    }
    pub fn into_inner(self) -> String {
        self.0
    }
}

/// An avatar URL, or empty for "no avatar".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadImg(String);

impl HeadImg {
    pub fn parse(raw: &str) -> Result<Self, AppError> {
        if raw.trim().is_empty() {
            return Ok(Self(String::new()));
        }
        Ok(Self(parse_http_url("headImg", raw, 2048)?))
    }
    pub fn into_inner(self) -> String {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_are_normalized_and_checked() {
        assert_eq!(Username::parse(" Alice_1 ").unwrap().as_str(), "alice_1");
        for bad in ["ab", "has space", "名字名字", &"a".repeat(33), "a$b"] {
            assert!(Username::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn passwords_have_bounds() {
        assert!(Password::parse("short").is_err());
        assert!(Password::parse("long enough").is_ok());
        assert!(Password::parse(&"x".repeat(129)).is_err());
    }

    #[test]
    fn nick_names_allow_any_script_but_not_blank() {
        assert!(NickName::parse("王五😀").is_ok());
        assert!(NickName::parse("   ").is_err());
        assert!(NickName::parse(&"字".repeat(33)).is_err());
    }

    #[test]
    fn head_img_is_a_url_or_empty() {
        assert_eq!(HeadImg::parse("").unwrap().into_inner(), "");
        assert!(HeadImg::parse("not a url").is_err());
    }
}
