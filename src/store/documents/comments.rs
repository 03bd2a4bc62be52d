//! Comments and replies: the comment document, and the port that stores
//! comments and keeps each post's newest comment ids.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::{lenient_bool, StoreResult};

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

impl CommentDoc {
    /// A top-level comment with nothing else on it: what tests, benchmarks
    /// and seeding build, changing the fields they care about with `..`.
    pub fn text(
        id: i64,
        post_id: i64,
        author_uid: i64,
        content: impl Into<String>,
        createtime: i64,
    ) -> Self {
        CommentDoc {
            id,
            post_id,
            author_uid,
            content: content.into(),
            createtime,
            reply_to: None,
            thread_id: None,
            likes_peak: 0,
            deleted: false,
        }
    }
}

/// Comments and replies. Part of `DocStore`.
#[async_trait]
pub trait CommentDocs: Send + Sync {
    /// Up to `limit` of a user's live comments below `before`, newest
    /// first (erasing an account asks for the newest again and again, as
    /// each call sees what the last did not delete; an export pages).
    async fn comments_by_author(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CommentDoc>>;

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
}
