//! Raw device models as phones report them, and the display names admins map them to.

use serde::{Deserialize, Serialize};

use super::{parse_text, text_schema};

pub const MAX_MODEL_CHARS: usize = 100;
pub const MAX_DISPLAY_NAME_CHARS: usize = 64;

/// A raw model as a client may send it (a path segment, an import row).
pub fn model_schema() -> utoipa::openapi::Object {
    text_schema(MAX_MODEL_CHARS, true, false)
}
fn display_name_schema() -> utoipa::openapi::Object {
    text_schema(MAX_DISPLAY_NAME_CHARS, true, false)
}
fn brand_schema() -> utoipa::openapi::Object {
    text_schema(MAX_DISPLAY_NAME_CHARS, false, true)
}
use crate::error::AppError;

/// The lookup key of a raw model: trimmed, lower-case, runs of whitespace
/// collapsed, so "ONEPLUS  A6000" and " oneplus a6000" are one model.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceKey(String);

impl DeviceKey {
    pub fn normalize(raw: &str) -> String {
        raw.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    }

    pub fn parse(field: &str, raw: &str) -> Result<Self, AppError> {
        parse_text(field, raw, MAX_MODEL_CHARS, true)?;
        Ok(Self(Self::normalize(raw)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DisplayName {
    #[schema(schema_with = display_name_schema)]
    pub zh: String,
    #[schema(schema_with = display_name_schema)]
    pub en: String,
}

/// The body of `PUT /admin/device-models/{model}`, and one row of an import.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceModelRequest {
    pub display_name: DisplayName,
    #[serde(default)]
    #[schema(schema_with = brand_schema)]
    pub brand: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceModel {
    pub key: DeviceKey,
    pub display_name: DisplayName,
    pub brand: String,
}

impl DeviceModel {
    /// `prefix` locates the row in error messages (`[3].` in an import).
    pub fn parse(prefix: &str, model: &str, req: DeviceModelRequest) -> Result<Self, AppError> {
        let key = DeviceKey::parse(&format!("{prefix}model"), model)?;
        let name = |field: &str, v: &str| {
            parse_text(
                &format!("{prefix}displayName.{field}"),
                v,
                MAX_DISPLAY_NAME_CHARS,
                true,
            )
        };
        let display_name = DisplayName {
            zh: name("zh", &req.display_name.zh)?,
            en: name("en", &req.display_name.en)?,
        };
        let brand = parse_text(
            &format!("{prefix}brand"),
            req.brand.as_deref().unwrap_or_default(),
            MAX_DISPLAY_NAME_CHARS,
            false,
        )?;
        Ok(Self {
            key,
            display_name,
            brand,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_collapse_case_and_spaces() {
        assert_eq!(DeviceKey::normalize("  ONEPLUS \t A6000 "), "oneplus a6000");
        assert_eq!(
            DeviceKey::parse("model", "ONEPLUS  A6000").unwrap(),
            DeviceKey::parse("model", "oneplus a6000").unwrap()
        );
        assert!(DeviceKey::parse("model", "   ").is_err());
    }

    #[test]
    fn display_names_are_required_in_both_languages() {
        let req: DeviceModelRequest =
            serde_json::from_value(serde_json::json!({"displayName":{"zh":"一加 6","en":" "}}))
                .unwrap();
        match DeviceModel::parse("[2].", "ONEPLUS A6000", req) {
            Err(AppError::InvalidInput { field, .. }) => assert_eq!(field, "[2].displayName.en"),
            other => panic!("{other:?}"),
        }
    }
}
