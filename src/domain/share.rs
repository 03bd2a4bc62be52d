//! Shares (分享): where a post was passed on.

use serde::{Deserialize, Serialize};

/// Where a post was shared to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SharePlatform {
    /// A WeChat chat.
    Wechat,
    /// The sharer's own Moments.
    Moments,
    Weibo,
    Qq,
    /// A copied link.
    Link,
}

/// `POST /posts/{id}/shares`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct NewShareRequest {
    pub platform: SharePlatform,
}
