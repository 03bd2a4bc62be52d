//! Posts: the post document, which carries its newest comment and like
//! ids and its author's uid, and the port that stores it.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::domain::media::Media;
use crate::domain::post::{Audience, Category, Geo, Visibility};
use crate::store::{lenient_bool, StoreResult};

/// A post as stored: its content, and the newest comment and like ids it
/// carries so that a page of posts needs no join.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PostDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub author_uid: i64,
    pub category: Category,
    pub content: String,
    #[serde(rename = "pictureUrls")]
    pub picture_urls: Vec<String>,
    /// Pictures uploaded here, in the order the post shows them: copies of
    /// their records' `media`, so that reading a post reads nothing more.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<Media>,
    pub device: String,
    pub geo: Option<Geo>,
    pub visibility: Visibility,
    /// Whom an `only` or `except` post names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Audience>,
    pub createtime: i64,
    #[serde(default)]
    pub comments_postid: Vec<i64>,
    #[serde(default)]
    pub likes_postid: Vec<i64>,
    #[serde(default, deserialize_with = "lenient_bool")]
    pub deleted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moderation: Option<PostModeration>,
}

/// Whether a post is there and deleted, and nothing more of it: what the
/// search indexer reads when it reads its settling window again, where
/// nearly every post is one it indexed a moment ago.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
pub struct PostPresence {
    #[serde(rename = "_id")]
    pub id: i64,
    #[serde(default, deserialize_with = "lenient_bool")]
    pub deleted: bool,
}

/// Where moderation leaves a post that only its author sees.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PostModeration {
    /// A content filter holds it until a moderator approves it.
    Held,
    /// A moderator removed it.
    Removed,
}

impl PostDoc {
    /// A public text post with nothing else on it: what tests, benchmarks and
    /// seeding build, changing the fields they care about with `..`; so a new
    /// field is added here once, not at each of them.
    pub fn text(id: i64, author_uid: i64, content: impl Into<String>, createtime: i64) -> Self {
        PostDoc {
            id,
            author_uid,
            category: Category::Text,
            content: content.into(),
            picture_urls: vec![],
            media: vec![],
            device: String::new(),
            geo: None,
            visibility: Visibility::Public,
            audience: None,
            createtime,
            comments_postid: vec![],
            likes_postid: vec![],
            deleted: false,
            moderation: None,
        }
    }
}

/// The immutable part of a post (everything but the id arrays), which is what
/// the live store caches: the arrays change on every like and are derived
/// elsewhere anyway.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PostBody {
    pub id: i64,
    pub author_uid: i64,
    pub category: Category,
    pub content: String,
    pub picture_urls: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<Media>,
    pub device: String,
    pub geo: Option<Geo>,
    pub visibility: Visibility,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Audience>,
    pub createtime: i64,
    #[serde(default)]
    pub deleted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moderation: Option<PostModeration>,
}

impl From<PostDoc> for PostBody {
    fn from(p: PostDoc) -> Self {
        PostBody {
            id: p.id,
            author_uid: p.author_uid,
            category: p.category,
            content: p.content,
            picture_urls: p.picture_urls,
            media: p.media,
            device: p.device,
            geo: p.geo,
            visibility: p.visibility,
            audience: p.audience,
            createtime: p.createtime,
            deleted: p.deleted,
            moderation: p.moderation,
        }
    }
}

/// Posts. Part of `DocStore`.
#[async_trait]
pub trait PostDocs: Send + Sync {
    async fn insert_post(&self, post: &PostDoc) -> StoreResult<()>;

    /// Deleted posts included, flagged: the caller decides.
    async fn posts_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<PostDoc>>;

    /// True when this call deleted it.
    async fn delete_post(&self, id: i64) -> StoreResult<bool>;

    /// Holds, removes or (with `None`) restores a live post; the post as
    /// it is now, `None` when there is no such live post.
    async fn set_post_moderation(
        &self,
        id: i64,
        moderation: Option<PostModeration>,
    ) -> StoreResult<Option<PostDoc>>;

    /// Ids of an author's live posts below `before`, newest first.
    async fn post_ids_by_author(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>>;

    /// Posts with ids above `after`, oldest first, deleted ones included
    /// (flagged): what the search indexer reads in order (its comment and
    /// like arrays may be left empty).
    async fn posts_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<PostDoc>>;

    /// `posts_after`, each post's id and deleted flag only.
    async fn post_presence_after(
        &self,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<PostPresence>>;

    /// Ids of these authors' live posts below `before`, newest first, merged:
    /// what a home timeline holds, read from the documents.
    async fn post_ids_by_authors(
        &self,
        authors: &[i64],
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>>;
}
