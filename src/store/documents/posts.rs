//! Posts and what hangs on them: the post document, its comments and
//! replies, likes on posts and comments.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::domain::post::{Audience, Category, Geo, Visibility};
use crate::store::{lenient_bool, StoreResult};

/// A post as stored: seed 003's "final storage structure".
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PostDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub author_uid: i64,
    pub category: Category,
    pub content: String,
    #[serde(rename = "pictureUrls")]
    pub picture_urls: Vec<String>,
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
            device: String::new(),
            geo: None,
            visibility: Visibility::Public,
            audience: None,
            createtime,
            comments_postid: vec![],
            likes_postid: vec![],
            deleted: false,
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
    pub device: String,
    pub geo: Option<Geo>,
    pub visibility: Visibility,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Audience>,
    pub createtime: i64,
    #[serde(default)]
    pub deleted: bool,
}

impl From<PostDoc> for PostBody {
    fn from(p: PostDoc) -> Self {
        PostBody {
            id: p.id,
            author_uid: p.author_uid,
            category: p.category,
            content: p.content,
            picture_urls: p.picture_urls,
            device: p.device,
            geo: p.geo,
            visibility: p.visibility,
            audience: p.audience,
            createtime: p.createtime,
            deleted: p.deleted,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReplyRef {
    #[serde(rename = "commentId")]
    pub comment_id: i64,
    pub uid: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CommentDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    #[serde(rename = "postId")]
    pub post_id: i64,
    pub author_uid: i64,
    pub content: String,
    pub createtime: i64,
    #[serde(rename = "replyTo")]
    pub reply_to: Option<ReplyRef>,
    /// On a reply, the top-level comment whose thread it is in: its parent,
    /// or its parent's thread when the parent is a reply too. `None` on a
    /// top-level comment, and on replies made before threads were kept
    /// (2026-12-01), which no thread lists.
    #[serde(rename = "threadId", default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<i64>,
    /// The most likes the comment has had at once: what the hot order
    /// ranks by. It never falls (an unlike leaves it), so paging in that
    /// order shows no comment twice. Kept in the documents; a cached body
    /// holds whatever it was when cached, and nothing reads it there.
    #[serde(rename = "likesPeak", default)]
    pub likes_peak: i64,
    #[serde(default, deserialize_with = "lenient_bool")]
    pub deleted: bool,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum LikeKind {
    Post,
    Comment,
}

impl LikeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LikeKind::Post => "post",
            LikeKind::Comment => "comment",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LikeDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub kind: LikeKind,
    #[serde(rename = "targetId")]
    pub target_id: i64,
    pub uid: i64,
    #[serde(rename = "createTime")]
    pub create_time: i64,
}

/// Posts with their comments and likes. Part of `DocStore`.
#[async_trait]
pub trait PostDocs: Send + Sync {
    async fn insert_post(&self, post: &PostDoc) -> StoreResult<()>;

    /// Up to `limit` of a user's live comments, newest first (for erasing
    /// an account: each call sees what the last did not delete).
    async fn comments_by_author(&self, uid: i64, limit: usize) -> StoreResult<Vec<CommentDoc>>;

    /// Up to `limit` of the likes a user gave below `before`, newest first,
    /// of posts and comments alike.
    async fn likes_by_user(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LikeDoc>>;

    /// Deleted posts included, flagged: the caller decides.
    async fn posts_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<PostDoc>>;

    /// True when this call deleted it.
    async fn delete_post(&self, id: i64) -> StoreResult<bool>;

    /// Ids of an author's live posts below `before`, newest first.
    async fn post_ids_by_author(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>>;

    /// Inserts the comment and records its id first in the post's
    /// `comments_postid`, keeping the newest `cap`.
    async fn insert_comment(&self, comment: &CommentDoc, cap: usize) -> StoreResult<()>;

    /// Comments by `(post_id, comment_id)`: with their posts, so that a
    /// sharded store reads only the shards of those posts.
    async fn comments_by_ids(&self, ids: &[(i64, i64)]) -> StoreResult<Vec<CommentDoc>>;

    /// Comments by id alone, for the callers that do not know the post (a
    /// comment's own URL, a like of a comment): every shard is asked.
    async fn comments_by_id_alone(&self, ids: &[i64]) -> StoreResult<Vec<CommentDoc>>;

    /// Flags it deleted and drops its id from the post; true when this call did.
    async fn delete_comment(&self, comment: &CommentDoc) -> StoreResult<bool>;

    /// A post's live comments below `before`, newest first.
    async fn comments_page(
        &self,
        post_id: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>>;

    /// A reply thread's live replies after `after`, oldest first.
    async fn thread_page(
        &self,
        post_id: i64,
        thread_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>>;

    /// Raises the comment's `likes_peak` to the number of its likes, if
    /// that is more (after a like of it).
    async fn raise_likes_peak(&self, post_id: i64, comment_id: i64) -> StoreResult<()>;

    /// A post's live comments by (`likes_peak`, id), highest first, below
    /// `after` in that order.
    async fn hot_comments_page(
        &self,
        post_id: i64,
        after: Option<(i64, i64)>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>>;

    /// `(post_id, comment_id)` of every live comment on these posts.
    async fn comment_ids_of_posts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>>;

    /// `(parent_comment_id, reply_id)` of every live reply to these
    /// comments, given as `(post_id, comment_id)` (a reply is on its
    /// parent's post).
    async fn reply_ids_of_comments(&self, comments: &[(i64, i64)]) -> StoreResult<Vec<(i64, i64)>>;

    /// Inserts the like, and for a post records its id in `likes_postid`.
    /// `Ok(false)` when this user already liked it: liking twice is one like.
    async fn insert_like(&self, like: &LikeDoc, cap: usize) -> StoreResult<bool>;

    /// `insert_like` without the post's `likes_postid`: the like document
    /// alone, the array left to `refresh_like_array` (a like storm's
    /// arrays are written in batches, not once per like).
    async fn insert_like_only(&self, like: &LikeDoc) -> StoreResult<bool>;

    /// `delete_like` without the post's `likes_postid`, likewise.
    async fn delete_like_only(
        &self,
        kind: LikeKind,
        target_id: i64,
        uid: i64,
    ) -> StoreResult<Option<LikeDoc>>;

    /// Writes the post's `likes_postid` afresh from its likes (the newest
    /// `cap`), and `read_at` (epoch ms) as when that was. It reads the
    /// likes again after writing, and writes again until they agree, so of
    /// two refreshes racing on one post the array ends as the likes are.
    async fn refresh_like_array(&self, post_id: i64, cap: usize, read_at: i64) -> StoreResult<()>;

    /// Removes the like if there is one, returning it.
    async fn delete_like(
        &self,
        kind: LikeKind,
        target_id: i64,
        uid: i64,
    ) -> StoreResult<Option<LikeDoc>>;

    /// Every like of these targets.
    async fn likes_of_targets(
        &self,
        kind: LikeKind,
        target_ids: &[i64],
    ) -> StoreResult<Vec<LikeDoc>>;

    async fn likes_page(
        &self,
        kind: LikeKind,
        target_id: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<LikeDoc>>;

    /// Ids of these authors' live posts below `before`, newest first, merged:
    /// what a home timeline holds, read from the documents.
    async fn post_ids_by_authors(
        &self,
        authors: &[i64],
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>>;
}
