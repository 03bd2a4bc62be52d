//! What a report may say, checked before it is filed: what it is about,
//! why (a category and up to 1,000 characters), and for a report of an
//! account, up to 20 of their posts and the rules it cites.

use serde::{Deserialize, Serialize};

use super::{id_array_schema, parse_text, text_schema};
use crate::error::AppError;

pub const MAX_COMMENT_CHARS: usize = 1_000;
pub const MAX_POST_IDS: usize = 20;
pub const MAX_RULES: usize = 20;
/// Rules are numbered from 1; an instance has at most this many.
pub const MAX_RULE_NUMBER: u32 = 100;

/// What a case is about: what was reported, or the strike an
/// appeal is of.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    Post,
    Comment,
    User,
    Appeal,
}

/// What a report may be about.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReportedKind {
    Post,
    Comment,
    User,
}

impl From<ReportedKind> for TargetKind {
    fn from(k: ReportedKind) -> Self {
        match k {
            ReportedKind::Post => TargetKind::Post,
            ReportedKind::Comment => TargetKind::Comment,
            ReportedKind::User => TargetKind::User,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReportCategory {
    Spam,
    Harassment,
    Hate,
    Sexual,
    Violence,
    Illegal,
    Other,
}

fn comment_schema() -> utoipa::openapi::Object {
    text_schema(MAX_COMMENT_CHARS, false, false)
}
fn post_ids_schema() -> utoipa::openapi::Array {
    id_array_schema(MAX_POST_IDS)
}
fn rules_schema() -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(
            utoipa::openapi::ObjectBuilder::new()
                .schema_type(utoipa::openapi::schema::Type::Integer)
                .minimum(Some(1))
                .maximum(Some(MAX_RULE_NUMBER)),
        )
        .max_items(Some(MAX_RULES))
        .build()
}

/// The body of `POST /reports` as a client sends it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewReportRequest {
    pub target_type: ReportedKind,
    #[serde(deserialize_with = "super::optional_id")]
    #[schema(value_type = i64, minimum = 1)]
    pub target_id: Option<i64>,
    pub category: ReportCategory,
    /// Why, in the reporter's words: at most 1,000 characters.
    #[serde(default)]
    #[schema(schema_with = comment_schema)]
    pub comment: String,
    /// For a report of an account: up to 20 of their posts that show why.
    #[serde(default, deserialize_with = "super::id_list")]
    #[schema(schema_with = post_ids_schema)]
    pub post_ids: Vec<i64>,
    /// Numbers of the rules (`GET /instance`) the report cites.
    #[serde(default, deserialize_with = "super::id_list")]
    #[schema(schema_with = rules_schema)]
    pub rules: Vec<i64>,
}

/// A report that passed every check but the ones that need the stores
/// (whether the target exists and the reporter may see it).
#[derive(Debug, Clone)]
pub struct NewReport {
    pub target_type: ReportedKind,
    pub target_id: i64,
    pub category: ReportCategory,
    pub comment: String,
    pub post_ids: Vec<i64>,
    pub rules: Vec<u32>,
}

impl NewReport {
    pub fn parse(req: NewReportRequest) -> Result<Self, AppError> {
        let target_id = match req.target_id {
            Some(id) if id > 0 => id,
            Some(_) => return Err(AppError::invalid("targetId", "must be a positive id")),
            None => return Err(AppError::invalid("targetId", "is required")),
        };
        let comment = parse_text("comment", &req.comment, MAX_COMMENT_CHARS, false)?;
        if req.post_ids.len() > MAX_POST_IDS {
            return Err(AppError::invalid(
                "postIds",
                format!("at most {MAX_POST_IDS} posts"),
            ));
        }
        if !req.post_ids.is_empty() && req.target_type != ReportedKind::User {
            return Err(AppError::unprocessable(
                "postIds",
                "only a report of an account names posts",
            ));
        }
        if let Some(bad) = req.post_ids.iter().position(|p| *p <= 0) {
            return Err(AppError::invalid(
                format!("postIds[{bad}]"),
                "must be a positive id",
            ));
        }
        if req.rules.len() > MAX_RULES {
            return Err(AppError::invalid(
                "rules",
                format!("at most {MAX_RULES} rules"),
            ));
        }
        if let Some(bad) = req
            .rules
            .iter()
            .position(|r| !(1..=i64::from(MAX_RULE_NUMBER)).contains(r))
        {
            return Err(AppError::invalid(
                format!("rules[{bad}]"),
                format!("rules are numbered 1 to {MAX_RULE_NUMBER}"),
            ));
        }
        let mut post_ids = req.post_ids;
        post_ids.sort_unstable();
        post_ids.dedup();
        let mut rules: Vec<u32> = req.rules.iter().map(|r| *r as u32).collect();
        rules.sort_unstable();
        rules.dedup();
        Ok(NewReport {
            target_type: req.target_type,
            target_id,
            category: req.category,
            comment,
            post_ids,
            rules,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: serde_json::Value) -> Result<NewReport, AppError> {
        NewReport::parse(
            serde_json::from_value(v).map_err(|e| AppError::invalid("body", e.to_string()))?,
        )
    }

    #[test]
    fn a_report_is_bounded_and_only_an_account_report_names_posts() {
        let ok = parse(
            serde_json::json!({"targetType": "user", "targetId": 5, "category": "spam",
            "comment": "广告", "postIds": [3, 2, 3], "rules": [2, 1, 2]}),
        )
        .unwrap();
        assert_eq!((ok.post_ids, ok.rules), (vec![2, 3], vec![1, 2]));
        let refused = |v: serde_json::Value, field: &str| match parse(v) {
            Err(AppError::InvalidInput { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{other:?}"),
        };
        assert!(matches!(
            parse(serde_json::json!({"targetType": "post", "targetId": 5, "category": "spam", "postIds": [1]})),
            Err(AppError::Unprocessable { field, .. }) if field == "postIds"
        ));
        refused(
            serde_json::json!({"targetType": "post", "targetId": 5, "category": "spam",
                "comment": "长".repeat(MAX_COMMENT_CHARS + 1)}),
            "comment",
        );
        refused(
            serde_json::json!({"targetType": "user", "targetId": 5, "category": "spam",
                "postIds": (1..=21).collect::<Vec<i64>>()}),
            "postIds",
        );
        refused(
            serde_json::json!({"targetType": "post", "targetId": 0, "category": "spam"}),
            "targetId",
        );
        refused(
            serde_json::json!({"targetType": "post", "targetId": 5, "category": "spam", "rules": [0]}),
            "rules[0]",
        );
        let longest = "长".repeat(MAX_COMMENT_CHARS);
        assert!(
            parse(serde_json::json!({"targetType": "comment", "targetId": 5,
            "category": "hate", "comment": longest}))
            .is_ok()
        );
    }
}
