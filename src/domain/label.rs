//! Labels (标签): a user's own named groups of friends, which an `only` or
//! `except` post names as its audience.

use serde::Deserialize;

use super::{parse_text, text_schema};
use crate::error::AppError;

/// Labels one user may keep.
pub const MAX_LABELS: usize = 100;
/// Members one label may hold.
pub const MAX_LABEL_MEMBERS: usize = 1000;
pub const MAX_LABEL_NAME_CHARS: usize = 30;

fn name_schema() -> utoipa::openapi::Object {
    text_schema(MAX_LABEL_NAME_CHARS, true, false)
}

/// In a patch, null (or absence) leaves the name as it is.
fn new_name_schema() -> utoipa::openapi::Object {
    text_schema(MAX_LABEL_NAME_CHARS, true, true)
}

fn members_schema() -> utoipa::openapi::Array {
    super::id_array_schema(MAX_LABEL_MEMBERS)
}

/// `POST /labels`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct NewLabelRequest {
    #[schema(schema_with = name_schema)]
    pub name: String,
    /// Uids of the owner's friends.
    #[serde(default, deserialize_with = "super::id_list")]
    #[schema(schema_with = members_schema)]
    pub members: Vec<i64>,
}

/// `PATCH /labels/{id}`: what is given replaces what was.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct LabelPatchRequest {
    #[serde(default)]
    #[schema(schema_with = new_name_schema)]
    pub name: Option<String>,
    /// The whole new member list.
    #[serde(default, deserialize_with = "optional_id_list")]
    #[schema(schema_with = members_schema)]
    pub members: Option<Vec<i64>>,
}

fn optional_id_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<i64>>, D::Error> {
    super::id_list(d).map(Some)
}

/// A label's name: 1 to 30 characters with something visible, trimmed.
pub fn parse_name(raw: &str) -> Result<String, AppError> {
    parse_text("name", raw, MAX_LABEL_NAME_CHARS, true)
}

/// Distinct positive uids, at most `MAX_LABEL_MEMBERS`, in the order given.
pub fn parse_members(raw: Vec<i64>) -> Result<Vec<i64>, AppError> {
    if raw.len() > MAX_LABEL_MEMBERS {
        return Err(AppError::invalid(
            "members",
            format!("at most {MAX_LABEL_MEMBERS} people"),
        ));
    }
    let mut out: Vec<i64> = Vec::with_capacity(raw.len());
    for uid in raw {
        if uid < 1 {
            return Err(AppError::invalid("members", "uids are positive"));
        }
        if !out.contains(&uid) {
            out.push(uid);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_members_are_bounded() {
        assert_eq!(parse_name(" 家人 ").unwrap(), "家人");
        assert!(parse_name("   ").is_err());
        assert!(parse_name(&"字".repeat(31)).is_err());
        assert_eq!(parse_members(vec![3, 2, 3]).unwrap(), vec![3, 2]);
        assert!(parse_members(vec![0]).is_err());
        assert!(parse_members((1..=1001).collect()).is_err());
    }
}
