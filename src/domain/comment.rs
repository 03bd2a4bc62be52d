//! Comment text: 1 to 2000 characters, emoji included (counted as
//! characters, stored as they are).

use serde::Deserialize;

use super::{parse_text, text_schema};
use crate::error::AppError;

pub const MAX_COMMENT_CHARS: usize = 2000;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewCommentRequest {
    #[schema(schema_with = comment_content_schema)]
    pub content: String,
    /// A comment on the same post to reply to.
    #[serde(default, deserialize_with = "super::optional_id")]
    pub reply_to_comment_id: Option<i64>,
}

fn comment_content_schema() -> utoipa::openapi::Object {
    text_schema(MAX_COMMENT_CHARS, true, false)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentContent(String);

impl CommentContent {
    pub fn parse(raw: &str) -> Result<Self, AppError> {
        parse_text("content", raw, MAX_COMMENT_CHARS, true).map(Self)
    }
    pub fn into_inner(self) -> String {
        self.0
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comment_bounds() {
        assert!(CommentContent::parse("👍").is_ok());
        assert!(CommentContent::parse("  ").is_err());
        assert!(CommentContent::parse(&"😀".repeat(2000)).is_ok());
        assert!(CommentContent::parse(&"😀".repeat(2001)).is_err());
    }
}
