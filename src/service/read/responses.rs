//! What the API returns: the response types, with the field names clients
//! already read (`likeCount`, `pictureUrls`, `createtime`, ...), exactly.

use serde::Serialize;

use crate::domain::post::{Audience, Category, Geo, Visibility};
use crate::store::{PostModeration, UserCard};

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpandedPost {
    pub id: i64,
    pub category: Category,
    pub content: String,
    pub createtime: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub createtime_text: Option<String>,
    /// Display name in the reader's language; the raw model when unmapped.
    pub device: String,
    pub device_model: String,
    pub geo: Option<Geo>,
    pub visibility: Visibility,
    /// Whom an `only` or `except` post names: shown to its author alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<Audience>,
    /// `held` (by a content filter, until a moderator approves it) or
    /// `removed` (by a moderator): only its author sees such a post, so
    /// only its author ever sees this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moderation: Option<PostModeration>,
    pub author: UserCard,
    pub picture_urls: Vec<String>,
    /// Pictures uploaded with the post, in its order.
    pub media: Vec<crate::service::media::MediaView>,
    pub like_count: u64,
    pub comment_count: u64,
    /// Shares recorded (one per reader, post and platform).
    pub share_count: u64,
    /// Views by signed-in readers other than the author, one per reader
    /// and day.
    pub view_count: u64,
    pub liked_by_me: bool,
    /// The latest 5, newest first.
    pub comments: Vec<CommentView>,
    /// The latest 20, newest first.
    pub likes: Vec<LikeView>,
    pub server_time: i64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommentView {
    pub id: i64,
    pub post_id: i64,
    pub content: String,
    pub createtime: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub createtime_text: Option<String>,
    pub author: UserCard,
    pub reply_to: Option<ReplyToView>,
    pub like_count: u64,
    /// Replies to this comment.
    pub comment_count: u64,
    pub liked_by_me: bool,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplyToView {
    pub comment_id: i64,
    pub uid: i64,
    pub nick_name: String,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LikeView {
    pub id: i64,
    pub post_id: i64,
    pub create_time: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_time_text: Option<String>,
    pub user: UserCard,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LikeState {
    pub liked: bool,
    pub like_count: u64,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FavoriteState {
    pub favorited: bool,
}

/// One page of a list; `nextCursor` is null on the last page.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Pass as `cursor` for the next page; null on the last one.
    pub next_cursor: Option<String>,
    /// The server's clock (ms since the epoch), for relative times.
    pub server_time: i64,
}

/// A card for a user the stores no longer know: lists stay renderable.
pub fn unknown_user(uid: i64) -> UserCard {
    UserCard {
        uid,
        nick_name: String::new(),
        head_img: String::new(),
    }
}
