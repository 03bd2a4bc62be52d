//! What an admin says about the service: its name, how to reach whoever
//! runs it, and its numbered rules (which reports may cite). App stores
//! ask that a community publish contact information and its rules.

use serde::{Deserialize, Serialize};

use super::{parse_text, text_schema};
use crate::error::AppError;

pub const MAX_NAME_CHARS: usize = 100;
pub const MAX_CONTACT_CHARS: usize = 200;
pub const MAX_RULE_CHARS: usize = 500;
pub const MAX_RULES: usize = super::report::MAX_RULE_NUMBER as usize;

fn name_schema() -> utoipa::openapi::Object {
    text_schema(MAX_NAME_CHARS, true, false)
}
fn contact_schema() -> utoipa::openapi::Object {
    text_schema(MAX_CONTACT_CHARS, true, true)
}
fn rules_schema() -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(text_schema(MAX_RULE_CHARS, true, false))
        .max_items(Some(MAX_RULES))
        .build()
}

/// The body of `PUT /admin/instance`, and what `GET /instance` answers.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceInfo {
    /// The service's name, as users see it.
    #[schema(schema_with = name_schema)]
    pub name: String,
    /// An e-mail address or URL where whoever runs the service answers;
    /// absent (or null) until an admin sets one, which a client should
    /// say it does not know rather than show an empty string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = contact_schema)]
    pub contact: Option<String>,
    /// The rules, numbered from 1 in this order: a report cites them by
    /// number.
    #[serde(default)]
    #[schema(schema_with = rules_schema)]
    pub rules: Vec<String>,
}

impl Default for InstanceInfo {
    fn default() -> Self {
        InstanceInfo {
            name: "moments".into(),
            contact: None,
            rules: Vec::new(),
        }
    }
}

impl InstanceInfo {
    pub fn parse(req: InstanceInfo) -> Result<Self, AppError> {
        let name = parse_text("name", &req.name, MAX_NAME_CHARS, true)?;
        let contact = req
            .contact
            .as_deref()
            .map(|c| parse_text("contact", c, MAX_CONTACT_CHARS, true))
            .transpose()?;
        if req.rules.len() > MAX_RULES {
            return Err(AppError::invalid(
                "rules",
                format!("at most {MAX_RULES} rules"),
            ));
        }
        let rules = req
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| parse_text(&format!("rules[{i}]"), r, MAX_RULE_CHARS, true))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(InstanceInfo {
            name,
            contact,
            rules,
        })
    }
}
