//! Media (photos a user uploads): what a post carries of each, its alt
//! text and focus point, and the storage key its renditions live under.

use serde::{Deserialize, Serialize};

use super::{char_len, parse_text};
use crate::error::AppError;

/// The most characters of alt text a picture keeps (Mastodon's bound).
pub const MAX_DESCRIPTION_CHARS: usize = 1500;

/// How a stored rendition is encoded: the two formats every client shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    Jpeg,
    Png,
}

impl Encoding {
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Jpeg => "image/jpeg",
            Encoding::Png => "image/png",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Encoding::Jpeg => "jpg",
            Encoding::Png => "png",
        }
    }

    pub fn from_extension(ext: &str) -> Option<Self> {
        match ext {
            "jpg" => Some(Encoding::Jpeg),
            "png" => Some(Encoding::Png),
            _ => None,
        }
    }
}

/// The longest focus text taken, spaces included.
pub const MAX_FOCUS_CHARS: usize = 64;

/// A focus as text (`Focus::parse` takes these and more), for the OpenAPI
/// document: two numbers from -1 to 1, with up to six decimals.
pub const FOCUS_PATTERN: &str = concat!(
    r"^ *-?(0(\.[0-9]{1,6})?|\.[0-9]{1,6}|1(\.0{1,6})?) *, *",
    r"-?(0(\.[0-9]{1,6})?|\.[0-9]{1,6}|1(\.0{1,6})?) *$"
);

/// Where in a picture the eye should stay when a client crops it (the
/// grid's squares): x from −1 (left) to 1 (right), y from −1 (bottom) to 1
/// (top), Mastodon's convention.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Focus {
    #[schema(minimum = -1.0, maximum = 1.0)]
    pub x: f64,
    #[schema(minimum = -1.0, maximum = 1.0)]
    pub y: f64,
}

impl Focus {
    /// `"x,y"`, each a number from −1 to 1.
    pub fn parse(raw: &str) -> Result<Self, AppError> {
        let bad = || AppError::invalid("focus", "must be \"x,y\", each a number from -1 to 1");
        if raw.len() > MAX_FOCUS_CHARS {
            return Err(bad());
        }
        let (x, y) = raw.trim().split_once(',').ok_or_else(bad)?;
        let number = |s: &str| {
            let s = s.trim();
            // Plain decimals only: f64's parser also takes "inf" and "NaN".
            let plain = !s.is_empty()
                && s.len() <= 24
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+'));
            plain
                .then(|| s.parse::<f64>().ok())
                .flatten()
                .filter(|v| (-1.0..=1.0).contains(v))
                .ok_or_else(bad)
        };
        Ok(Focus {
            x: number(x)?,
            y: number(y)?,
        })
    }
}

/// `null` is taken as absent: the alt text stays as it was.
fn description_schema() -> utoipa::openapi::Object {
    super::text_schema(MAX_DESCRIPTION_CHARS, false, true)
}

/// `PUT /media/{id}`: what is given replaces what was; `focus: null`
/// takes the focus point away.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MediaPatchRequest {
    #[serde(default)]
    #[schema(schema_with = description_schema)]
    pub description: Option<String>,
    /// `"x,y"`, each from -1 to 1; `null` for none.
    #[serde(default, deserialize_with = "present")]
    #[schema(schema_with = focus_schema)]
    pub focus: Option<Option<String>>,
}

fn focus_schema() -> utoipa::openapi::Object {
    focus_text_schema(true)
}

/// The document's schema for a focus as text; `nullable` where `null`
/// takes the focus away.
pub fn focus_text_schema(nullable: bool) -> utoipa::openapi::Object {
    super::StringSchema {
        pattern: Some(FOCUS_PATTERN.into()),
        max: Some(MAX_FOCUS_CHARS),
        nullable,
        ..Default::default()
    }
    .build()
}

/// The document's schema for alt text sent as a form field (never null).
pub fn description_text_schema() -> utoipa::openapi::Object {
    super::text_schema(MAX_DESCRIPTION_CHARS, false, false)
}

/// A field that may be given as `null`: `Some(None)`, apart from absent.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// Alt text: what a screen reader says for the picture.
pub fn parse_description(raw: &str) -> Result<String, AppError> {
    if char_len(raw) > MAX_DESCRIPTION_CHARS {
        return Err(AppError::invalid(
            "description",
            format!("must be at most {MAX_DESCRIPTION_CHARS} characters"),
        ));
    }
    parse_text("description", raw, MAX_DESCRIPTION_CHARS, false)
}

/// The folder a picture's renditions are stored under: 128 random bits in
/// hex, so a URL can be neither guessed nor traced to its account.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MediaKey(String);

impl MediaKey {
    pub const HEX_LEN: usize = 32;

    /// A fresh key from the OS's generator; `None` if it fails, which
    /// must never fall back to a guessable key.
    pub fn random() -> Option<Self> {
        let mut bytes = [0u8; 16];
        getrandom::getrandom(&mut bytes).ok()?;
        Some(Self(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// A key as a URL names it: 32 lowercase hex digits, nothing else.
    pub fn parse(raw: &str) -> Option<Self> {
        (raw.len() == Self::HEX_LEN && raw.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
            .then(|| Self(raw.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Where one rendition of it is stored, and how a URL names it.
    pub fn object(&self, rendition: Rendition, encoding: Encoding) -> String {
        format!("{}/{}.{}", self.0, rendition.name(), encoding.extension())
    }
}

/// The two renditions kept of each picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendition {
    /// Upright, capped on its long side, no metadata.
    Original,
    /// Small, for the nine-picture grid.
    Preview,
}

impl Rendition {
    pub fn name(self) -> &'static str {
        match self {
            Rendition::Original => "original",
            Rendition::Preview => "preview",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "original" => Some(Rendition::Original),
            "preview" => Some(Rendition::Preview),
            _ => None,
        }
    }
}

/// A processed picture as a post carries it: everything its expanded form
/// shows, so that a page of posts with nine pictures each reads nothing
/// more than a page without.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Media {
    pub id: i64,
    pub key: MediaKey,
    /// How both renditions are encoded.
    pub encoding: Encoding,
    pub width: u32,
    pub height: u32,
    /// The original rendition's bytes.
    pub size: u64,
    pub preview_width: u32,
    pub preview_height: u32,
    pub blurhash: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<Focus>,
}

impl Media {
    /// The objects it is stored as.
    pub fn objects(&self) -> [String; 2] {
        [Rendition::Original, Rendition::Preview].map(|r| self.key.object(r, self.encoding))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_focus_is_two_numbers_within_the_square() {
        assert_eq!(Focus::parse("0.5,-1").unwrap(), Focus { x: 0.5, y: -1.0 });
        assert_eq!(
            Focus::parse(" -0.25 , 1 ").unwrap(),
            Focus { x: -0.25, y: 1.0 }
        );
        for bad in [
            "", "0.5", "1.5,0", "0,-1.01", "NaN,0", "inf,0", "0,0,0", "a,b", "1e0,0",
        ] {
            assert!(Focus::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_focus_the_pattern_allows_is_taken() {
        let pattern = regex::Regex::new(FOCUS_PATTERN).unwrap();
        for ok in [
            "0,0",
            "-1,1",
            " .5 , -0.25 ",
            "1.000000,-0.123456",
            "-0,0.5",
        ] {
            assert!(pattern.is_match(ok), "{ok}");
            assert!(Focus::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["1.5,0", "2,0", "0", "0,0,0", "a,b", "1.01,0"] {
            assert!(!pattern.is_match(bad), "{bad}");
        }
    }

    #[test]
    fn keys_are_128_random_bits_and_urls_name_nothing_else() {
        let a = MediaKey::random().unwrap();
        assert_eq!(a.as_str().len(), 32);
        assert_ne!(Some(&a), MediaKey::random().as_ref());
        assert_eq!(MediaKey::parse(a.as_str()), Some(a.clone()));
        for bad in [
            "",
            "../etc",
            &"A".repeat(32),
            &"0".repeat(31),
            &"0".repeat(33),
        ] {
            assert_eq!(MediaKey::parse(bad), None, "{bad:?}");
        }
        assert_eq!(
            a.object(Rendition::Preview, Encoding::Png),
            format!("{}/preview.png", a.as_str())
        );
    }

    #[test]
    fn alt_text_is_bounded() {
        assert_eq!(parse_description(" a cat ").unwrap(), "a cat");
        assert!(parse_description(&"字".repeat(MAX_DESCRIPTION_CHARS)).is_ok());
        assert!(parse_description(&"字".repeat(MAX_DESCRIPTION_CHARS + 1)).is_err());
        assert!(parse_description("bell\u{7}").is_err());
    }
}
