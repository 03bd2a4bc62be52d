//! Account fields: usernames are the login key, nick names and avatars are what others see.

use crate::ids::DAY_MS;
use serde::{Deserialize, Serialize};

use super::{char_len, parse_http_url, parse_text, text_schema, url_schema, StringSchema};

/// What `Username::parse` accepts; letters are stored lower-case.
pub const USERNAME_PATTERN: &str = "^[A-Za-z0-9_.-]{3,32}$";
pub const MAX_NICK_NAME_CHARS: usize = 32;

pub fn username_schema() -> utoipa::openapi::Object {
    StringSchema {
        pattern: Some(USERNAME_PATTERN.into()),
        min: Some(3),
        max: Some(32),
        ..Default::default()
    }
    .build()
}
pub fn password_schema() -> utoipa::openapi::Object {
    StringSchema {
        min: Some(8),
        max: Some(Password::MAX_CHARS),
        ..Default::default()
    }
    .build()
}
pub fn nick_name_schema() -> utoipa::openapi::Object {
    text_schema(MAX_NICK_NAME_CHARS, true, true)
}
pub fn head_img_schema() -> utoipa::openapi::Object {
    url_schema(true, true)
}
use crate::error::AppError;

/// Lower-case ASCII letters, digits, `_`, `.` and `-`, 3 to 32 long: safe in
/// URLs and unambiguous to type. Input is lower-cased, so `Alice` is `alice`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Username(String);

impl Username {
    pub fn parse(raw: &str) -> Result<Self, AppError> {
        // Checked before lower-casing: some non-ASCII letters (the Kelvin
        // sign) lower-case to ASCII ones, and would pass for another name.
        if !(3..=32).contains(&raw.len()) {
            return Err(AppError::invalid("username", "must be 3 to 32 characters"));
        }
        if !raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        {
            return Err(AppError::invalid(
                "username",
                "may contain only letters, digits, '_', '.' and '-'",
            ));
        }
        Ok(Self(raw.to_ascii_lowercase()))
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
        parse_text("nickName", raw, MAX_NICK_NAME_CHARS, true).map(Self)
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
        if raw.is_empty() {
            return Ok(Self(String::new()));
        }
        Ok(Self(parse_http_url("headImg", raw)?))
    }
    pub fn into_inner(self) -> String {
        self.0
    }
}

/// How far back others may see a user's posts (WeChat's 允许朋友查看朋友圈的范围:
/// 最近三天 / 一个月 / 半年 / 全部). The author always sees all of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub enum AlbumWindow {
    #[default]
    #[serde(rename = "all")]
    All,
    #[serde(rename = "3d")]
    ThreeDays,
    #[serde(rename = "1m")]
    OneMonth,
    #[serde(rename = "6m")]
    SixMonths,
}

impl AlbumWindow {
    /// The narrowest window there is: a post younger than this is inside
    /// every author's window, so reading it needs no author's setting.
    pub const NARROWEST_MS: i64 = 3 * DAY_MS;

    /// How far back, in ms; `None` for no limit.
    pub fn span_ms(self) -> Option<i64> {
        match self {
            AlbumWindow::All => None,
            AlbumWindow::ThreeDays => Some(Self::NARROWEST_MS),
            AlbumWindow::OneMonth => Some(30 * DAY_MS),
            AlbumWindow::SixMonths => Some(182 * DAY_MS),
        }
    }

    /// Whether a post made at `createtime` is inside the window at `now`.
    pub fn shows(self, createtime: i64, now: i64) -> bool {
        self.span_ms()
            .is_none_or(|span| createtime >= now.saturating_sub(span))
    }

    pub fn is_all(&self) -> bool {
        *self == AlbumWindow::All
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_are_normalized_and_checked() {
        assert_eq!(Username::parse("Alice_1").unwrap().as_str(), "alice_1");
        for bad in [
            "ab",
            "has space",
            " alice",
            "名字名字",
            &"a".repeat(33),
            "a$b",
            "\u{212a}elvin",
        ] {
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
