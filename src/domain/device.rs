//! Raw device models as phones report them, and the display names admins map them to.

use serde::{Deserialize, Serialize};

use super::{char_len, check_text};
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
        let key = Self::normalize(raw);
        if key.is_empty() || char_len(&key) > 100 {
            return Err(AppError::invalid(
                field,
                "a device model must be 1 to 100 characters",
            ));
        }
        check_text(field, &key)?;
        Ok(Self(key))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DisplayName {
    pub zh: String,
    pub en: String,
}

/// The body of `PUT /admin/device-models/{model}`, and one row of an import.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeviceModelRequest {
    pub display_name: DisplayName,
    #[serde(default)]
    pub brand: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceModel {
    pub key: DeviceKey,
    pub display_name: DisplayName,
    pub brand: String,
}

impl DeviceModel {
    /// `prefix` locates the row in error messages ("[3]." in an import).
    pub fn parse(prefix: &str, model: &str, req: DeviceModelRequest) -> Result<Self, AppError> {
        let key = DeviceKey::parse(&format!("{prefix}model"), model)?;
        let name = |field: &str, v: &str| -> Result<String, AppError> {
            let v = v.trim();
            let f = format!("{prefix}displayName.{field}");
            if !(1..=64).contains(&char_len(v)) {
                return Err(AppError::invalid(f, "must be 1 to 64 characters"));
            }
            check_text(&f, v)?;
            Ok(v.to_string())
        };
        let display_name = DisplayName {
            zh: name("zh", &req.display_name.zh)?,
            en: name("en", &req.display_name.en)?,
        };
        let brand = req.brand.unwrap_or_default().trim().to_string();
        if char_len(&brand) > 64 {
            return Err(AppError::invalid(
                format!("{prefix}brand"),
                "must be at most 64 characters",
            ));
        }
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
