//! Comment text: 1 to 2000 characters, emoji-safe (seed 003: "支持emoji字符存储").

use serde::Deserialize;

use super::{char_len, check_text};
use crate::error::AppError;

pub const MAX_COMMENT_CHARS: usize = 2000;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewCommentRequest {
    pub content: String,
    #[serde(default)]
    pub reply_to_comment_id: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentContent(String);

impl CommentContent {
    pub fn parse(raw: &str) -> Result<Self, AppError> {
        let s = raw.trim();
        let n = char_len(s);
        if n == 0 || n > MAX_COMMENT_CHARS {
            return Err(AppError::invalid(
                "content",
                format!("must be 1 to {MAX_COMMENT_CHARS} characters"),
            ));
        }
        check_text("content", s)?;
        Ok(Self(s.to_string()))
    }
    pub fn into_inner(self) -> String {
        self.0
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
