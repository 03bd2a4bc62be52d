//! The ports the services talk to, and the records that cross them.
//!
//! `DocStore` is the truth (MongoDB's role): users, posts, comments, likes,
//! device models. `LiveStore` is derived state (Redis's role): sets of ids,
//! cached bodies and cards, sessions. Every live key can be rebuilt from the
//! documents, so the live port offers a few generic, batchable operations
//! and the services decide what to rebuild from where.

pub mod embedded;
pub mod faults;
pub mod live_checks;
pub mod metered;
pub mod mongo;
pub mod redis;

use async_trait::async_trait;
use serde::{Deserialize, Deserializer, Serialize};

use crate::domain::device::DisplayName;
use crate::domain::post::{Audience, Category, Geo, Visibility};
use crate::domain::user::AlbumWindow;

// The stores' error lives beside the API's (`crate::error`), which maps
// it: so neither error module depends on the stores or the domain.
pub use crate::error::{StoreError, StoreResult};

/// Some wire servers store a `$set` boolean as 0/1; read either.
pub(crate) fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum B {
        Bool(bool),
        Int(i64),
        Float(f64),
    }
    Ok(match Option::<B>::deserialize(d)? {
        None => false,
        Some(B::Bool(b)) => b,
        Some(B::Int(i)) => i != 0,
        Some(B::Float(f)) => f != 0.0,
    })
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UserDoc {
    #[serde(rename = "_id")]
    pub uid: i64,
    pub username: String,
    #[serde(rename = "nickName")]
    pub nick_name: String,
    #[serde(rename = "headImg")]
    pub head_img: String,
    #[serde(rename = "passwordHash")]
    pub password_hash: String,
    #[serde(default)]
    pub roles: Vec<String>,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
    #[serde(rename = "lastActiveAt")]
    pub last_active_at: i64,
    /// How far back others see this user's posts.
    #[serde(
        rename = "albumWindow",
        default,
        skip_serializing_if = "AlbumWindow::is_all"
    )]
    pub album_window: AlbumWindow,
    /// Raised (to a fresh id) by every change that must end the sessions
    /// opened before it: a new password, signing out everywhere. A session
    /// holds the value it was opened under and is good only while that is
    /// no lower, so a sign-in that checked the old password before the
    /// change and stored its session after still opens nothing.
    #[serde(rename = "credentialGen", default)]
    pub credential_gen: i64,
}

impl UserDoc {
    /// What a deleted account's username becomes: not a name anyone can
    /// register or sign in with (`#` is not allowed in usernames).
    pub fn erased_username(uid: i64) -> String {
        format!("deleted#{uid}")
    }

    pub fn is_erased(&self) -> bool {
        self.username.starts_with("deleted#")
    }

    pub fn card(&self) -> UserCard {
        UserCard {
            uid: self.uid,
            nick_name: self.nick_name.clone(),
            head_img: self.head_img.clone(),
        }
    }
    pub fn is_admin(&self) -> bool {
        self.roles.iter().any(|r| r == "admin")
    }

    /// What the live store caches of the account: the card, and the album
    /// window every read of this user's older posts needs beside it.
    pub fn cached_card(&self) -> CachedCard {
        CachedCard {
            card: self.card(),
            album_window: self.album_window,
            credential_gen: self.credential_gen,
        }
    }
}

/// A card as the live store keeps it (`BlobKey::Card`). Read as a plain
/// `UserCard` wherever the window does not matter: the extra field is
/// ignored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CachedCard {
    #[serde(flatten)]
    pub card: UserCard,
    #[serde(
        rename = "albumWindow",
        default,
        skip_serializing_if = "AlbumWindow::is_all"
    )]
    pub album_window: AlbumWindow,
    /// The account's `credentialGen`, which a cached session is checked
    /// against on every use (`SessionDoc::honoured_by_card`).
    #[serde(rename = "credentialGen", default)]
    pub credential_gen: i64,
}

/// A profile change: what is `Some` replaces what was.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProfileChange<'a> {
    pub nick_name: Option<&'a str>,
    pub head_img: Option<&'a str>,
    pub album_window: Option<AlbumWindow>,
}

/// Seed 000's "simple info": what every list shows next to an item.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserCard {
    pub uid: i64,
    pub nick_name: String,
    pub head_img: String,
}

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

/// A post a user keeps for later (收藏, seed 002): one per user and post.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FavoriteDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub uid: i64,
    #[serde(rename = "postId")]
    pub post_id: i64,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

/// A post passed on (分享, seed 002): one per user, post and platform, so
/// sharing again to the same place counts once and no client can grow a
/// post's share count past its readers times the platforms.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ShareDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    #[serde(rename = "postId")]
    pub post_id: i64,
    pub uid: i64,
    pub platform: crate::domain::share::SharePlatform,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

/// A reader's view of a post on one day (浏览, seed 002): one per reader,
/// post and day, kept `post_views::HISTORY_MS` for the reader's history.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ViewDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub uid: i64,
    #[serde(rename = "postId")]
    pub post_id: i64,
    /// Days since the epoch (UTC) of the view.
    pub day: i64,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

/// `follower` follows `followee`; friends are mutual follows.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FollowDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub follower: i64,
    pub followee: i64,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

/// A one-way filter lighter than a block, set by `uid` on `other`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum FilterKind {
    /// 不看他: `other`'s posts leave `uid`'s home feed; their album stays open.
    Mute,
    /// 不让他看: none of `uid`'s posts are visible to `other`.
    Hide,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FilterDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub kind: FilterKind,
    /// Who set it.
    pub uid: i64,
    /// On whom.
    pub other: i64,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

/// One of `owner`'s labels (标签): a named group of their friends.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LabelDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub owner: i64,
    pub name: String,
    pub members: Vec<i64>,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
    #[serde(rename = "updatedAt")]
    pub updated_at: i64,
}

/// `blocker` blocked `blocked`: neither sees the other anywhere.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BlockDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub blocker: i64,
    pub blocked: i64,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum NotificationKind {
    Like,
    Comment,
    Reply,
    Follow,
    /// The actor's new post names the recipient (提醒谁看).
    Mention,
}

/// Seed 000's msg_info: something that happened to `uid`, done by `actor`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NotificationDoc {
    #[serde(rename = "_id")]
    pub id: i64,
    pub uid: i64,
    pub kind: NotificationKind,
    pub actor: i64,
    #[serde(rename = "postId")]
    pub post_id: Option<i64>,
    #[serde(rename = "commentId")]
    pub comment_id: Option<i64>,
    pub createtime: i64,
    /// One notification per recipient and event (`like:post:ID:ACTOR`).
    pub dedupe: String,
    #[serde(default, deserialize_with = "lenient_bool")]
    pub read: bool,
}

/// The SHA-256 of a bearer token: all that is ever stored of it, so a dump
/// of either store holds no token anyone can use.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenHash(pub [u8; 32]);

impl TokenHash {
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The inverse of `hex`.
    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Self(out))
    }
}

impl std::fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A hash is no secret, but logs need no more than its start.
        write!(f, "TokenHash({}…)", &self.hex()[..8])
    }
}

/// One signed-in device of an account: the record behind a bearer token.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SessionDoc {
    /// The session's id, which the account's owner sees and signs out by.
    #[serde(rename = "_id")]
    pub id: i64,
    pub uid: i64,
    /// Hex SHA-256 of the token.
    #[serde(rename = "tokenHash")]
    pub token_hash: String,
    /// What the client said it is (a `device` field at sign-in, else its
    /// `User-Agent`), shortened.
    pub device: String,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
    #[serde(rename = "lastSeenAt")]
    pub last_seen_at: i64,
    #[serde(rename = "expiresAt")]
    pub expires_at: i64,
    /// The account's `credentialGen` this session was opened under.
    #[serde(rename = "credentialGen", default)]
    pub credential_gen: i64,
}

impl SessionDoc {
    /// `honoured_by`, as the live store has the account: its card, which
    /// an erased account has none of, and which every change of
    /// credentials drops.
    pub fn honoured_by_card(&self, card: &CachedCard) -> bool {
        card.card.uid == self.uid && self.credential_gen >= card.credential_gen
    }

    /// Whether `user`, as the documents have it now, still honours this
    /// session: it exists, is not erased, and no change of credentials came
    /// after the session was opened.
    pub fn honoured_by(&self, user: Option<&UserDoc>) -> bool {
        user.is_some_and(|u| {
            u.uid == self.uid && !u.is_erased() && self.credential_gen >= u.credential_gen
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceModelDoc {
    #[serde(rename = "_id")]
    pub key: String,
    #[serde(rename = "displayName")]
    pub display_name: DisplayName,
    #[serde(default)]
    pub brand: String,
    #[serde(rename = "updatedAt")]
    pub updated_at: i64,
    #[serde(rename = "updatedBy")]
    pub updated_by: i64,
}

/// Accounts and their sessions. Part of `DocStore`.
#[async_trait]
pub trait AccountDocs: Send + Sync {
    /// `Duplicate("username")` when the name is taken.
    async fn insert_user(&self, user: &UserDoc) -> StoreResult<()>;

    async fn user_by_username(&self, username: &str) -> StoreResult<Option<UserDoc>>;

    async fn users_by_ids(&self, uids: &[i64]) -> StoreResult<Vec<UserDoc>>;

    async fn update_profile(
        &self,
        uid: i64,
        change: ProfileChange<'_>,
    ) -> StoreResult<Option<UserDoc>>;

    /// Sets the password hash and `credentialGen` to `credential_gen`, in
    /// one write, if the account's `credentialGen` is still `checked_gen`
    /// (the one its old password was checked under); false, writing
    /// nothing, if another change of credentials came first.
    async fn set_password_hash(
        &self,
        uid: i64,
        password_hash: &str,
        checked_gen: i64,
        credential_gen: i64,
    ) -> StoreResult<bool>;

    /// Raises the account's `credentialGen` to at least `credential_gen`:
    /// every session opened under a lower one stops being honoured.
    async fn raise_credential_gen(&self, uid: i64, credential_gen: i64) -> StoreResult<()>;

    /// Sets the `credentialGen` one session of `uid` is held to (the one a
    /// password change keeps).
    async fn set_session_credential_gen(
        &self,
        uid: i64,
        session_id: i64,
        credential_gen: i64,
    ) -> StoreResult<()>;

    async fn touch_user(&self, uid: i64, at: i64) -> StoreResult<()>;

    /// `Duplicate("session")` if its id or token hash exists already.
    async fn insert_session(&self, session: &SessionDoc) -> StoreResult<()>;

    /// `uid`'s session behind a token hash, expired or not: the caller
    /// decides. (The token names its uid, the sessions' shard key.)
    async fn session_by_token_hash(
        &self,
        uid: i64,
        token_hash: &str,
    ) -> StoreResult<Option<SessionDoc>>;

    /// Up to `limit` of a user's sessions, newest first.
    async fn sessions_of_user(&self, uid: i64, limit: usize) -> StoreResult<Vec<SessionDoc>>;

    /// Deletes those of these sessions that belong to `uid`; how many went.
    async fn delete_sessions(&self, uid: i64, ids: &[i64]) -> StoreResult<u64>;

    /// Records that `uid`'s session `id` was used at `at`.
    async fn touch_session(&self, uid: i64, id: i64, at: i64) -> StoreResult<()>;

    /// Deletes up to `limit` sessions that expired before `now`; how many went.
    async fn purge_expired_sessions(&self, now: i64, limit: usize) -> StoreResult<u64>;

    /// Turns a deleted account into its tombstone: the username becomes
    /// `UserDoc::erased_username(uid)` (so the name is free, and nobody can
    /// sign in with it), the card, password and roles are emptied, and the
    /// account is marked as being erased until `erasure_done`. False if
    /// there was no such account.
    async fn erase_user(&self, uid: i64) -> StoreResult<bool>;

    /// Up to `limit` accounts marked as being erased.
    async fn accounts_being_erased(&self, limit: usize) -> StoreResult<Vec<i64>>;

    /// Clears the mark: nothing of the account is left to erase.
    async fn erasure_done(&self, uid: i64) -> StoreResult<()>;
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

/// The social graph: follows and blocks. Part of `DocStore`.
#[async_trait]
pub trait SocialDocs: Send + Sync {
    /// `Ok(false)` when the edge exists already.
    async fn insert_follow(&self, follow: &FollowDoc) -> StoreResult<bool>;

    /// True when this call removed the edge.
    async fn delete_follow(&self, follower: i64, followee: i64) -> StoreResult<bool>;

    /// Edges into `uid` (its followers) below `before`, newest first.
    async fn followers_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>>;

    /// Edges out of `uid` (whom it follows) below `before`, newest first.
    async fn following_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>>;

    /// (followers, following) of `uid`.
    async fn follow_counts(&self, uid: i64) -> StoreResult<(u64, u64)>;

    /// Of `others`: those `uid` follows, and those who follow `uid`.
    async fn follow_edges(&self, uid: i64, others: &[i64]) -> StoreResult<(Vec<i64>, Vec<i64>)>;

    /// `Ok(false)` when the block exists already.
    async fn insert_block(&self, block: &BlockDoc) -> StoreResult<bool>;

    async fn delete_block(&self, blocker: i64, blocked: i64) -> StoreResult<bool>;

    /// Of `others`: those `uid` blocked or who blocked `uid`.
    async fn blocks_between(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>>;

    /// One page of `uid`'s followers, newest follow first, below the edge
    /// id `before`: those active since `since` (epoch ms), whom a post is
    /// pushed to, and where the next page starts (`None`: this was the last).
    async fn active_followers(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<(Vec<i64>, Option<i64>)>;

    /// (uid, followers) for each of these users.
    async fn follower_counts(&self, uids: &[i64]) -> StoreResult<Vec<(i64, u64)>>;

    /// Every edge out of these users (whom they follow).
    async fn follows_from(&self, uids: &[i64]) -> StoreResult<Vec<FollowDoc>>;

    /// Every block these users made (whom they blocked): bounded by
    /// `MOMENTS_MAX_BLOCKS` each.
    async fn blocks_by(&self, blockers: &[i64]) -> StoreResult<Vec<BlockDoc>>;

    /// Up to `limit` blocks of `uid` by others, in no particular order:
    /// strangers grow these, so they are read whole only while few.
    async fn blockers_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<BlockDoc>>;

    /// Of `others`: those who blocked `uid`.
    async fn blockers_among(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>>;

    /// Up to `limit` blocks `uid` made or received (erasing an account).
    async fn blocks_involving(&self, uid: i64, limit: usize) -> StoreResult<Vec<BlockDoc>>;

    /// `Ok(false)` when the filter exists already.
    async fn insert_filter(&self, filter: &FilterDoc) -> StoreResult<bool>;

    /// True when this call removed it.
    async fn delete_filter(&self, kind: FilterKind, uid: i64, other: i64) -> StoreResult<bool>;

    /// Filters of a kind `uid` set, below `before`, newest first.
    async fn filters_page(
        &self,
        kind: FilterKind,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FilterDoc>>;

    /// Every filter of a kind set by these users.
    async fn filters_set_by(&self, kind: FilterKind, uids: &[i64]) -> StoreResult<Vec<FilterDoc>>;

    /// The filters of a kind set on `on` by any of `setters` (who hide
    /// from a reader, among those the reader follows).
    async fn filters_on_from(
        &self,
        kind: FilterKind,
        on: i64,
        setters: &[i64],
    ) -> StoreResult<Vec<FilterDoc>>;

    /// Deletes up to `limit` filters set by or on `uid` (erasing an
    /// account); how many went.
    async fn delete_filters_involving(&self, uid: i64, limit: usize) -> StoreResult<u64>;
}

/// Shares of posts. Part of `DocStore`.
#[async_trait]
pub trait ShareDocs: Send + Sync {
    /// Records it; `Ok(false)` when the user shared the post to that
    /// platform already.
    async fn insert_share(&self, share: &ShareDoc) -> StoreResult<bool>;

    /// `(post_id, share_id)` of every share of these posts.
    async fn share_ids_of_posts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>>;

    /// Up to `limit` of a user's shares (erasing an account).
    async fn shares_by_user(&self, uid: i64, limit: usize) -> StoreResult<Vec<ShareDoc>>;

    /// True when this call deleted it.
    async fn delete_share(&self, share: &ShareDoc) -> StoreResult<bool>;
}

/// Views and each post's view count. Part of `DocStore`. Written in
/// batches by `post_views`, never on a read's path.
#[async_trait]
pub trait ViewDocs: Send + Sync {
    /// Stores one batch of views, `batch` its id (fresh per batch, from
    /// the instance that flushes it), and adds each one stored to its
    /// post's count, once: a call with the same batch again (a retry after
    /// any failure, however far the first call got) stores and counts
    /// nothing twice. A view whose reader, post and day another batch
    /// stored is left out, and not counted. Returns how many of the batch's
    /// views are stored, by this call or an earlier one.
    async fn record_views(&self, batch: i64, views: &[ViewDoc]) -> StoreResult<usize>;

    /// `(post_id, views)` of these posts (0 for none).
    async fn view_counts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, u64)>>;

    /// A reader's views made at or after `since` and below `before`,
    /// newest first.
    async fn views_page(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ViewDoc>>;

    /// Deletes up to `limit` views with ids below `before`; how many went.
    async fn purge_views_before(&self, before: i64, limit: usize) -> StoreResult<u64>;

    /// Deletes up to `limit` of a reader's views (erasing an account).
    async fn delete_views_of(&self, uid: i64, limit: usize) -> StoreResult<u64>;
}

/// Users' labels. Part of `DocStore`.
#[async_trait]
pub trait LabelDocs: Send + Sync {
    /// `Duplicate("label name")` when the owner has a label of that name.
    async fn insert_label(&self, label: &LabelDoc) -> StoreResult<()>;

    /// Up to `limit` of the owner's labels, oldest first.
    async fn labels_of(&self, owner: i64, limit: usize) -> StoreResult<Vec<LabelDoc>>;

    /// Labels by `(owner, id)`: with their owner, the labels' shard key.
    async fn labels_by_ids(&self, ids: &[(i64, i64)]) -> StoreResult<Vec<LabelDoc>>;

    /// Replaces what is `Some`; the label as it is now, `None` if the owner
    /// has no such label. `Duplicate("label name")` when the owner has
    /// another label of the new name.
    async fn update_label(
        &self,
        owner: i64,
        id: i64,
        name: Option<&str>,
        members: Option<&[i64]>,
        at: i64,
    ) -> StoreResult<Option<LabelDoc>>;

    /// True when this call deleted it.
    async fn delete_label(&self, owner: i64, id: i64) -> StoreResult<bool>;

    /// Deletes up to `limit` of the owner's labels (erasing an account);
    /// how many went.
    async fn delete_labels_of(&self, owner: i64, limit: usize) -> StoreResult<u64>;
}

/// Notifications and their read marks. Part of `DocStore`.
#[async_trait]
pub trait NotificationDocs: Send + Sync {
    /// `Ok(false)` when this event was notified already (same `dedupe`).
    async fn insert_notification(&self, n: &NotificationDoc) -> StoreResult<bool>;

    /// A recipient's notifications made at or after `since` and below
    /// `before`, newest first, `read` set for those up to their read mark.
    async fn notifications_page(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<NotificationDoc>>;

    /// How many of a recipient's notifications made at or after `since` are
    /// unread, counted up to `cap` at most.
    async fn unread_notifications(&self, uid: i64, since: i64, cap: u64) -> StoreResult<u64>;

    /// Moves a recipient's read mark up to `up_to`: every notification with
    /// an id at or below it is read. One write, however many there are.
    async fn mark_notifications_read(&self, uid: i64, up_to: i64) -> StoreResult<()>;

    /// Deletes up to `limit` notifications with ids below `before` (older
    /// than they are kept); how many went.
    async fn purge_notifications_before(&self, before: i64, limit: usize) -> StoreResult<u64>;

    /// Deletes up to `limit` notifications to or by `uid`; how many went.
    async fn delete_notifications_involving(&self, uid: i64, limit: usize) -> StoreResult<u64>;
}

/// A fan-out an instance left unfinished (it was stopping, or a store
/// failed under it): what resuming it from where it got to needs. Pushes
/// are idempotent, so resuming a little earlier than that is harmless.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FanOutDoc {
    #[serde(rename = "_id")]
    pub post_id: i64,
    pub author: i64,
    /// Who may see the post, which decides whom it is pushed to.
    pub visibility: Visibility,
    /// Followers active since then (epoch ms) are pushed to: the window
    /// the first run chose, kept so that the rest reaches the same people.
    #[serde(rename = "activeSince")]
    pub active_since: i64,
    /// The followers left are those whose follow edge id is below this
    /// (`active_followers` pages newest edge first). `None`: every one of
    /// them, and the author's own timeline.
    #[serde(rename = "resumeBefore")]
    pub resume_before: Option<i64>,
    /// Epoch ms.
    #[serde(rename = "savedAt")]
    pub saved_at: i64,
    /// Until when (epoch ms) the instance that claimed it is running it; 0
    /// when nobody has. A claim that lapses (its instance died) is taken
    /// again.
    #[serde(rename = "claimedUntil", default)]
    pub claimed_until: i64,
}

/// Unfinished fan-outs, resumed by whichever instance claims them. Part of
/// `DocStore`.
#[async_trait]
pub trait FanOutDocs: Send + Sync {
    /// Stores it unclaimed, in place of what was saved of the same post's
    /// fan-out before.
    async fn save_fan_out(&self, fan_out: &FanOutDoc) -> StoreResult<()>;

    /// Claims until `until` up to `limit` saved fan-outs that nobody holds
    /// at `now` (unclaimed, or claimed until before it) and returns them:
    /// each to one caller only, however many ask at once.
    async fn claim_fan_outs(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> StoreResult<Vec<FanOutDoc>>;

    /// Forgets a post's saved fan-out: it ran to the end.
    async fn delete_fan_out(&self, post_id: i64) -> StoreResult<()>;
}

/// Live keys of one owner whose update failed, as one save recorded them,
/// kept where every instance sees them: until they are dropped from the
/// live store, no instance serves them, and a restart does not forget them.
/// Each save inserts its own record rather than adding to the owner's:
/// only an insert is atomic on every MongoDB-wire server (docs/FERRETDB.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LiveRepairDoc {
    /// `Owner::code` and the save's mark: "p:ID@MARK".
    #[serde(rename = "_id")]
    pub id: String,
    /// `Owner::code`: "p:ID" or "u:UID". Empty in records of the version
    /// that kept one record per owner under the owner's code as its id.
    #[serde(default)]
    pub owner: String,
    /// `LiveKey::code` of each key.
    pub keys: Vec<String>,
    /// The save's generated id.
    pub mark: i64,
    /// Epoch ms of the failure.
    #[serde(rename = "savedAt")]
    pub saved_at: i64,
}

impl LiveRepairDoc {
    pub fn new(owner: Owner, keys: &[LiveKey], mark: i64, saved_at: i64) -> Self {
        let owner = owner.code();
        Self {
            id: format!("{owner}@{mark}"),
            owner,
            keys: keys.iter().map(|k| k.code()).collect(),
            mark,
            saved_at,
        }
    }

    /// The owner's code, in either version's records.
    pub fn owner_code(&self) -> &str {
        if self.owner.is_empty() {
            &self.id
        } else {
            &self.owner
        }
    }
}

/// The shared list of stale live keys. Part of `DocStore`.
#[async_trait]
pub trait LiveRepairDocs: Send + Sync {
    /// Records each owner's keys, one record per owner, under `mark` (a
    /// generated id, unique to this save).
    async fn save_live_repairs(
        &self,
        repairs: &[(Owner, Vec<LiveKey>)],
        mark: i64,
        now: i64,
    ) -> StoreResult<()>;

    /// Up to `limit` records, oldest first.
    async fn live_repairs(&self, limit: usize) -> StoreResult<Vec<LiveRepairDoc>>;

    /// Deletes the records of these ids: their keys were dropped.
    async fn finish_live_repairs(&self, ids: &[String]) -> StoreResult<()>;
}

/// The device-model table. Part of `DocStore`.
#[async_trait]
pub trait DeviceModelDocs: Send + Sync {
    async fn device_models(&self) -> StoreResult<Vec<DeviceModelDoc>>;

    async fn upsert_device_models(&self, models: &[DeviceModelDoc]) -> StoreResult<()>;

    async fn delete_device_model(&self, key: &str) -> StoreResult<bool>;
}

/// A create request remembered under its `Idempotency-Key`, so that a retry
/// gets the first answer instead of making the thing twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdempotencyDoc {
    /// `{scope}:{hex SHA-256 of the key}`: the scope is the account (or the
    /// client address, for sign-ups), so one client's keys never meet
    /// another's.
    #[serde(rename = "_id")]
    pub id: String,
    /// Hex SHA-256 of the method, path, query and body of the first request.
    pub fingerprint: String,
    #[serde(rename = "startedAt")]
    pub started_at: i64,
    /// The answer, once the first request finished: status and JSON text.
    /// Absent while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Epoch ms after which the key is forgotten.
    #[serde(rename = "expiresAt")]
    pub expires_at: i64,
    /// The id the request holding this key makes its thing under, minted
    /// when it claimed the key (so a thing made is dated by its own try).
    #[serde(rename = "reservedId", default)]
    pub reserved_id: i64,
    /// The ids of earlier tries of the same request that failed (at most
    /// `MAX_TRIES` - 1): one of them may have made its thing before
    /// failing, so a retry looks there first, answers what it finds, and
    /// never makes a second one.
    #[serde(rename = "earlierIds", default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_ids: Vec<i64>,
    /// Its request failed: a retry may run it again (under the same
    /// reserved id).
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "lenient_bool"
    )]
    pub released: bool,
}

impl IdempotencyDoc {
    /// Whether `claim` may take this record's place: it expired before
    /// `now`, or it is the same request again and this one never finished,
    /// having failed or started before `stale_before` (its instance died).
    /// Until it expires, a key is its first request's: another request
    /// must not take over the id that one reserved.
    pub fn replaceable(&self, claim: &IdempotencyDoc, now: i64, stale_before: i64) -> bool {
        self.expires_at < now
            || (self.fingerprint == claim.fingerprint
                && self.status.is_none()
                && (self.released || self.started_at < stale_before)
                && self.earlier_ids.len() + 1 < Self::MAX_TRIES)
    }

    /// `claim` taking this record's place: an expired one is forgotten
    /// whole, while the ids of one whose tries may have made their thing
    /// are passed on, to look at before making anything.
    pub fn succeeded_by(&self, claim: &IdempotencyDoc, now: i64) -> IdempotencyDoc {
        if self.expires_at < now {
            return claim.clone();
        }
        let mut earlier_ids = self.earlier_ids.clone();
        earlier_ids.extend(Some(self.reserved_id).filter(|id| *id != 0));
        IdempotencyDoc {
            earlier_ids,
            ..claim.clone()
        }
    }

    /// Tries of one request under one key, at most: a key every one of
    /// whose tries failed is not taken over again until it expires, so
    /// what a retry looks at stays bounded.
    pub const MAX_TRIES: usize = 16;
}

/// What claiming an `Idempotency-Key` came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyClaim {
    /// The claim is this request's: run it, making its thing under
    /// `reserved_id`, unless one of the earlier tries made it.
    Won { reserved_id: i64, earlier: Vec<i64> },
    /// Another request holds the key, or finished under it: its record.
    Held(IdempotencyDoc),
}

/// Users' favorite posts. Part of `DocStore`.
#[async_trait]
pub trait FavoriteDocs: Send + Sync {
    /// Records it; `Ok(false)` when the user already has that post.
    async fn insert_favorite(&self, favorite: &FavoriteDoc) -> StoreResult<bool>;

    /// Forgets the user's favorite of the post; true when there was one.
    async fn delete_favorite(&self, uid: i64, post_id: i64) -> StoreResult<bool>;

    /// Up to `limit` of the user's favorites below `before`, newest first.
    async fn favorites_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FavoriteDoc>>;

    /// Deletes up to `limit` of the user's favorites (erasing an account);
    /// how many it deleted.
    async fn delete_favorites_of(&self, uid: i64, limit: usize) -> StoreResult<u64>;
}

/// Remembered `Idempotency-Key`s. Part of `DocStore`.
#[async_trait]
pub trait IdempotencyDocs: Send + Sync {
    /// Stores `key` unless a record with its id is there; then answers that
    /// one instead. A record that is `replaceable` is replaced (as
    /// `succeeded_by` says), and the claim won.
    async fn claim_idempotency_key(
        &self,
        key: &IdempotencyDoc,
        now: i64,
        stale_before: i64,
    ) -> StoreResult<KeyClaim>;

    /// Records the answer of the request that claimed `id` at `started_at`.
    async fn complete_idempotency_key(
        &self,
        id: &str,
        started_at: i64,
        status: u16,
        body: &str,
    ) -> StoreResult<()>;

    /// Marks the unfinished claim of `id` made at `started_at` released
    /// (its request failed), so that a retry runs again.
    async fn release_idempotency_key(&self, id: &str, started_at: i64) -> StoreResult<()>;

    /// Deletes up to `limit` keys that expired before `now`; how many went.
    async fn purge_expired_idempotency_keys(&self, now: i64, limit: usize) -> StoreResult<u64>;
}

/// The documents: the truth, one port per aggregate (accounts, posts,
/// the social graph, notifications, device models, idempotency keys,
/// unfinished fan-outs, stale live keys) and the store-wide operations here. Every method is
/// one store round trip, and every batch method takes all the ids of a page
/// at once, so a page of N items costs a constant number of calls.
#[async_trait]
pub trait DocStore:
    AccountDocs
    + PostDocs
    + SocialDocs
    + NotificationDocs
    + DeviceModelDocs
    + IdempotencyDocs
    + FavoriteDocs
    + LabelDocs
    + ShareDocs
    + ViewDocs
    + FanOutDocs
    + LiveRepairDocs
    + Send
    + Sync
{
    async fn ping(&self) -> StoreResult<()>;
    /// Creates collections, validators and indexes; idempotent.
    async fn apply_schemas(&self) -> StoreResult<()>;
    /// Takes an instance id (0 to `MAX_INSTANCE`) that nobody holds, or
    /// whose lease ended before `now`, for `holder` until `until`; `None`
    /// when every one is held.
    async fn lease_instance_id(
        &self,
        holder: &str,
        now: i64,
        until: i64,
    ) -> StoreResult<Option<u16>>;
    /// Extends `holder`'s lease of `id`; false when it was lost to another.
    async fn renew_instance_id(&self, id: u16, holder: &str, until: i64) -> StoreResult<bool>;
    /// Ids of live posts above `after`, ascending: a full scan in pages, for
    /// the repair tools.
    async fn post_ids_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<i64>>;
    /// Uids above `after`, ascending.
    async fn user_ids_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<i64>>;
    /// (live posts, users), for progress bars.
    async fn totals(&self) -> StoreResult<(u64, u64)>;
    /// Finishes the writes already submitted and releases the store: the
    /// last call of a stopping process. Calls after it fail.
    async fn close(&self) -> StoreResult<()>;
}

/// Whose keys these are: one post's or one user's live keys share a Redis
/// Cluster slot and one generation counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Owner {
    Post(i64),
    User(i64),
}

impl Owner {
    /// "p:ID" or "u:UID": how the shared repair list names an owner.
    pub fn code(self) -> String {
        match self {
            Owner::Post(p) => format!("p:{p}"),
            Owner::User(u) => format!("u:{u}"),
        }
    }

    pub fn from_code(code: &str) -> Option<Self> {
        let (kind, id) = code.split_once(':')?;
        let id: i64 = id.parse().ok()?;
        match kind {
            "p" => Some(Owner::Post(id)),
            "u" => Some(Owner::User(id)),
            _ => None,
        }
    }
}

/// A cached value: JSON text the services wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlobKey {
    PostBody(i64),
    /// (post, comment): comments are cached under their post.
    CommentBody(i64, i64),
    Card(i64),
    /// Whose cards a post's latest comments need (authors and reply
    /// targets), as a JSON list of uids: a hint that lets a read fetch those
    /// cards with the comments. Never rebuilt from the documents; a stale or
    /// missing hint costs one more round trip and is written afresh.
    CommentPeople(i64),
    /// A session, cached under its user so that signing it out is one
    /// owner's change like any other (`SessionDoc` JSON).
    Session(i64, TokenHash),
    /// A post's view count as the documents have it (a JSON number);
    /// dropped after each flush of its views, rebuilt on the next read.
    ViewCount(i64),
    /// A hint that more accounts block this user than a read takes whole
    /// (`MOMENTS_BLOCKERS_READ_WHOLE`), left by the rebuild that found so:
    /// the next ones ask about people without counting the blocks again.
    /// Never rebuilt; it lapses with the live TTL, and a user blocked by
    /// fewer since is only asked about a little longer.
    ManyBlockers(i64),
}

impl BlobKey {
    /// What kind of value this is, without whose: a label for metrics.
    pub fn kind(self) -> &'static str {
        match self {
            BlobKey::PostBody(_) => "post_body",
            BlobKey::CommentBody(..) => "comment_body",
            BlobKey::Card(_) => "card",
            BlobKey::CommentPeople(_) => "comment_people",
            BlobKey::Session(..) => "session",
            BlobKey::ViewCount(_) => "view_count",
            BlobKey::ManyBlockers(_) => "many_blockers",
        }
    }

    /// A hint: never rebuilt from the documents, so its absence is only
    /// a miss, with nothing to load.
    pub fn is_hint(self) -> bool {
        matches!(self, BlobKey::CommentPeople(_) | BlobKey::ManyBlockers(_))
    }

    pub fn owner(self) -> Owner {
        match self {
            BlobKey::PostBody(p)
            | BlobKey::CommentBody(p, _)
            | BlobKey::CommentPeople(p)
            | BlobKey::ViewCount(p) => Owner::Post(p),
            BlobKey::Card(u) | BlobKey::Session(u, _) | BlobKey::ManyBlockers(u) => Owner::User(u),
        }
    }
}

/// A set of ids with scores (a Redis zset): complete or absent, never partial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetKey {
    /// member uid, score like id.
    PostLikers(i64),
    /// member and score comment id.
    PostComments(i64),
    /// (post, comment): member uid, score like id.
    CommentLikers(i64, i64),
    /// (post, comment): member and score reply id.
    CommentReplies(i64, i64),
    /// Whom a user follows: member followee, score edge id.
    Following(i64),
    /// A user's home timeline, newest `MOMENTS_TIMELINE_MAX` post ids: member
    /// and score the post id. Absent when the user was away; rebuilt on read.
    Home(i64),
    /// A user's friends (mutual follows): member friend, score 0.
    Friends(i64),
    /// Whom a user blocked: member the blocked, score block id. Bounded by
    /// `MOMENTS_MAX_BLOCKS`, so read whole.
    Blocking(i64),
    /// Who blocked a user: member the blocker, score block id. Strangers
    /// grow it, so a read takes at most `MOMENTS_BLOCKERS_READ_WHOLE` of
    /// it, and past that asks it only about the people at hand.
    BlockedBy(i64),
    /// Users whose posts a user keeps out of their home feed (不看他):
    /// member the muted, score filter id.
    Muted(i64),
    /// Users who hide their posts from a user (不让他看): member the one
    /// hiding, score filter id.
    HiddenBy(i64),
    /// (owner, label): the label's members, score 0.
    LabelMembers(i64, i64),
    /// member and score share id.
    PostShares(i64),
}

impl SetKey {
    /// Sets whose members come and go by id (a like, a comment): a member is
    /// there if its newest id was added and not removed, whatever order the
    /// changes arrive in. Changes to them never conflict, so they apply
    /// under any generation, and a rebuild merges the changes made while it
    /// read the documents instead of being thrown away: a busy post stays
    /// cached however many write to it at once.
    pub fn is_last_writer_wins(self) -> bool {
        matches!(
            self,
            SetKey::PostLikers(_)
                | SetKey::PostComments(_)
                | SetKey::CommentLikers(..)
                | SetKey::CommentReplies(..)
                | SetKey::PostShares(_)
        )
    }

    /// What kind of set this is, without whose: a label for metrics.
    pub fn kind(self) -> &'static str {
        match self {
            SetKey::PostLikers(_) => "post_likers",
            SetKey::PostComments(_) => "post_comments",
            SetKey::CommentLikers(..) => "comment_likers",
            SetKey::CommentReplies(..) => "comment_replies",
            SetKey::Following(_) => "following",
            SetKey::Home(_) => "home",
            SetKey::Friends(_) => "friends",
            SetKey::Blocking(_) => "blocking",
            SetKey::BlockedBy(_) => "blocked_by",
            SetKey::Muted(_) => "muted",
            SetKey::HiddenBy(_) => "hidden_by",
            SetKey::LabelMembers(..) => "label_members",
            SetKey::PostShares(_) => "post_shares",
        }
    }

    pub fn owner(self) -> Owner {
        match self {
            SetKey::PostLikers(p)
            | SetKey::PostComments(p)
            | SetKey::CommentLikers(p, _)
            | SetKey::CommentReplies(p, _)
            | SetKey::PostShares(p) => Owner::Post(p),
            SetKey::Following(u)
            | SetKey::Friends(u)
            | SetKey::Blocking(u)
            | SetKey::BlockedBy(u)
            | SetKey::Home(u)
            | SetKey::Muted(u)
            | SetKey::HiddenBy(u)
            | SetKey::LabelMembers(u, _) => Owner::User(u),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetRead {
    pub key: SetKey,
    /// How many of the highest-scored members to return.
    pub top: usize,
    /// A member whose score to look up (the viewer, for "liked by me").
    pub probe: Option<i64>,
    /// Only members scored below this (a keyset page of a timeline).
    pub below: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetView {
    pub count: u64,
    /// (member, score), highest score first.
    pub top: Vec<(i64, i64)>,
    pub probe_score: Option<i64>,
}

/// One rate-limit counter to move and read: a fixed window of `window_ms`
/// that starts at the first hit. Counters are not derived state; losing them
/// forgives everyone's recent requests, nothing more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitCheck {
    /// What is counted, and whose: `login_failures:u:UID`, `reads:ip:ADDR`.
    pub key: String,
    /// Added to the counter: 1 counts a request, 0 only looks, -1 takes one
    /// back (a login that turned out right).
    pub cost: i64,
    pub window_ms: u64,
    /// A count from which the counter is a lockout (an account shut by
    /// failed sign-ins): a store short of room forgets other counters
    /// first, never this one while its window lasts.
    pub lockout_at: Option<i64>,
}

/// A counter after its check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LimitCount {
    pub count: i64,
    /// Until the window ends.
    pub resets_in_ms: u64,
}

/// One batched read: everything comes back in one round trip.
#[derive(Debug, Default, Clone)]
pub struct LiveRead {
    pub blobs: Vec<BlobKey>,
    pub sets: Vec<SetRead>,
    pub gens: Vec<Owner>,
    /// Rate-limit counters, moved in the same round trip as the reads.
    pub limits: Vec<LimitCheck>,
}

impl LiveRead {
    pub fn is_empty(&self) -> bool {
        self.blobs.is_empty()
            && self.sets.is_empty()
            && self.gens.is_empty()
            && self.limits.is_empty()
    }
}

#[derive(Debug, Default, Clone)]
pub struct LiveAnswer {
    pub blobs: Vec<Option<String>>,
    /// `None`: absent, rebuild it from the documents.
    pub sets: Vec<Option<SetView>>,
    /// Each owner's generation; 0 when it has none (never written since
    /// it expired or the store was flushed), which vouches for no copy.
    pub gens: Vec<u64>,
    pub limits: Vec<LimitCount>,
}

/// Rebuilt state to store, each item only if its owner's generation is still
/// the one read before the documents were read (otherwise a write came in
/// between and the rebuilt value may be stale: skip it, the next read
/// rebuilds). Last-writer-wins sets are merged instead, whatever the
/// generation (`SetKey::is_last_writer_wins`).
#[derive(Debug, Default, Clone)]
pub struct LiveFill {
    pub blobs: Vec<(BlobKey, String, Option<u64>)>,
    pub sets: Vec<SetFill>,
    /// Owners whose generation read as absent (0): each is started, unless
    /// a write started it meanwhile, above every value it had before, so
    /// that later reads can keep copies under it (`service::near_cache`).
    pub start_gens: Vec<Owner>,
}

/// A whole set to store: its key, its (member, score) pairs, the guard generation.
pub type SetFill = (SetKey, Vec<(i64, i64)>, u64);

impl LiveFill {
    pub fn is_empty(&self) -> bool {
        self.blobs.is_empty() && self.sets.is_empty() && self.start_gens.is_empty()
    }
}

/// A change following a document write. Applied as one atomic step per owner
/// that bumps the owner's generation; set changes touch only sets that exist
/// (an absent set stays absent and is rebuilt whole).
#[derive(Debug, Clone, PartialEq)]
pub enum LiveChange {
    SetAdd(SetKey, i64, i64),
    SetRemove(SetKey, i64),
    /// For a last-writer-wins set: (member, id) was added. Kept unless the
    /// member was removed at this id or later.
    LwwAdd(SetKey, i64, i64),
    /// For a last-writer-wins set: the member's entry up to this id was
    /// removed (remembered for a while, so a late add of it stays out).
    LwwRemove(SetKey, i64, i64),
    PutBlob(BlobKey, String),
    Drop(LiveKey),
    /// A last-writer-wins set that begins now, empty (a new post's likers,
    /// comments, shares): made unless it exists, with the changes recorded
    /// while it was absent, so its first reads need no rebuild.
    Begin(SetKey),
}

/// One owner's changes after one document write. Set changes are applied
/// only if the owner's generation is still `expected_gen`, read before the
/// document write: then no other write came in between, and applying them
/// in arrival order is applying them in document order. Otherwise (or with no
/// expected generation) the sets they touch are dropped and rebuilt on the
/// next read. Blob puts and drops always apply: they carry whole values.
#[derive(Debug, Clone, PartialEq)]
pub struct Changes {
    pub owner: Owner,
    pub expected_gen: Option<u64>,
    pub changes: Vec<LiveChange>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LiveKey {
    Blob(BlobKey),
    Set(SetKey),
}

impl LiveKey {
    /// The key without its owner, as the shared repair list stores it:
    /// its kind, then the ids and hash beyond the owner's.
    pub fn code(self) -> String {
        match self {
            LiveKey::Blob(BlobKey::CommentBody(_, c)) => format!("b:comment_body:{c}"),
            LiveKey::Blob(BlobKey::Session(_, h)) => format!("b:session:{}", h.hex()),
            LiveKey::Blob(b) => format!("b:{}", b.kind()),
            LiveKey::Set(SetKey::CommentLikers(_, c)) => format!("s:comment_likers:{c}"),
            LiveKey::Set(SetKey::CommentReplies(_, c)) => format!("s:comment_replies:{c}"),
            LiveKey::Set(SetKey::LabelMembers(_, l)) => format!("s:label_members:{l}"),
            LiveKey::Set(k) => format!("s:{}", k.kind()),
        }
    }

    /// The inverse of `code`, for `owner`'s keys; `None` for a code of
    /// another owner kind, or none at all.
    pub fn from_code(owner: Owner, code: &str) -> Option<Self> {
        let mut parts = code.split(':');
        let (class, kind, rest) = (parts.next()?, parts.next()?, parts.next());
        if parts.next().is_some() {
            return None;
        }
        let sub = || rest.and_then(|r| r.parse::<i64>().ok());
        let key = match (owner, class, kind, rest.is_some()) {
            (Owner::Post(p), "b", "post_body", false) => LiveKey::Blob(BlobKey::PostBody(p)),
            (Owner::Post(p), "b", "comment_body", true) => {
                LiveKey::Blob(BlobKey::CommentBody(p, sub()?))
            }
            (Owner::Post(p), "b", "comment_people", false) => {
                LiveKey::Blob(BlobKey::CommentPeople(p))
            }
            (Owner::Post(p), "b", "view_count", false) => LiveKey::Blob(BlobKey::ViewCount(p)),
            (Owner::User(u), "b", "card", false) => LiveKey::Blob(BlobKey::Card(u)),
            (Owner::User(u), "b", "many_blockers", false) => {
                LiveKey::Blob(BlobKey::ManyBlockers(u))
            }
            (Owner::User(u), "b", "session", true) => {
                LiveKey::Blob(BlobKey::Session(u, TokenHash::from_hex(rest?)?))
            }
            (Owner::Post(p), "s", "post_likers", false) => LiveKey::Set(SetKey::PostLikers(p)),
            (Owner::Post(p), "s", "post_comments", false) => LiveKey::Set(SetKey::PostComments(p)),
            (Owner::Post(p), "s", "post_shares", false) => LiveKey::Set(SetKey::PostShares(p)),
            (Owner::Post(p), "s", "comment_likers", true) => {
                LiveKey::Set(SetKey::CommentLikers(p, sub()?))
            }
            (Owner::Post(p), "s", "comment_replies", true) => {
                LiveKey::Set(SetKey::CommentReplies(p, sub()?))
            }
            (Owner::User(u), "s", "following", false) => LiveKey::Set(SetKey::Following(u)),
            (Owner::User(u), "s", "home", false) => LiveKey::Set(SetKey::Home(u)),
            (Owner::User(u), "s", "friends", false) => LiveKey::Set(SetKey::Friends(u)),
            (Owner::User(u), "s", "blocking", false) => LiveKey::Set(SetKey::Blocking(u)),
            (Owner::User(u), "s", "blocked_by", false) => LiveKey::Set(SetKey::BlockedBy(u)),
            (Owner::User(u), "s", "muted", false) => LiveKey::Set(SetKey::Muted(u)),
            (Owner::User(u), "s", "hidden_by", false) => LiveKey::Set(SetKey::HiddenBy(u)),
            (Owner::User(u), "s", "label_members", true) => {
                LiveKey::Set(SetKey::LabelMembers(u, sub()?))
            }
            _ => return None,
        };
        Some(key)
    }
}

impl LiveChange {
    pub fn key(&self) -> LiveKey {
        match self {
            LiveChange::SetAdd(k, ..)
            | LiveChange::SetRemove(k, _)
            | LiveChange::LwwAdd(k, ..)
            | LiveChange::LwwRemove(k, ..)
            | LiveChange::Begin(k) => LiveKey::Set(*k),
            LiveChange::PutBlob(k, _) => LiveKey::Blob(*k),
            LiveChange::Drop(k) => *k,
        }
    }
}

/// Live, derived state. Losing all of it loses no data and logs nobody out
/// (sessions are documents; the live store caches them).
#[async_trait]
pub trait LiveStore: Send + Sync {
    async fn ping(&self) -> StoreResult<()>;
    async fn read(&self, read: &LiveRead) -> StoreResult<LiveAnswer>;
    async fn fill(&self, fill: &LiveFill) -> StoreResult<()>;
    /// Applies changes grouped by owner, all in one round trip.
    async fn apply(&self, changes: &[Changes]) -> StoreResult<()>;
    /// Bumps the generation and deletes the keys: the fallback when `apply`
    /// failed, so that no stale value outlives a write.
    async fn drop_keys(&self, owner: Owner, keys: &[LiveKey]) -> StoreResult<()>;

    /// Drops every derived key, cached sessions included: what losing the
    /// live store does, on purpose. Returns how many keys were dropped.
    async fn clear_derived(&self) -> StoreResult<usize>;

    /// Adds a new post to these users' home timelines where they exist
    /// (absent ones are rebuilt on read), keeping about the newest `max`.
    /// Generations are not bumped: commutative, idempotent adds need no
    /// ordering, and a rebuild re-reads the newest posts after storing.
    async fn push_to_timelines(&self, post_id: i64, uids: &[i64], max: usize) -> StoreResult<()>;

    /// A counter every instance polls to learn that the device table changed.
    async fn device_table_version(&self) -> StoreResult<u64>;
    async fn bump_device_table_version(&self) -> StoreResult<u64>;

    /// Records that a big account (pulled at read time, never pushed)
    /// published `post`, under the next number of a sequence every instance
    /// polls.
    async fn note_pulled_author_posted(&self, author: i64, post: i64) -> StoreResult<()>;

    /// The sequence's newest number, and the (author, post) noted after
    /// `seq`;
    /// `None` for the authors when the kept history (the newest
    /// [`PULLED_AUTHOR_HISTORY`]) no longer reaches back to `seq`, or the
    /// sequence went backwards (the store was flushed): the caller then
    /// forgets every author.
    async fn pulled_authors_posted_after(&self, seq: u64)
        -> StoreResult<crate::store::PulledNotes>;

    /// Queues refreshes of these posts' like arrays, durably (Redis: a
    /// stream with a consumer group; the in-process store has no queue, and
    /// there a like writes its post's array at once).
    async fn queue_array_refreshes(&self, _post_ids: &[i64]) -> StoreResult<()> {
        Err(StoreError::Other(anyhow::anyhow!("no durable queue")))
    }

    /// Takes up to `max` queued refreshes for `consumer`: first those
    /// another consumer took and left unacknowledged for `reclaim_idle_ms`
    /// (it died), then new ones. Each is (entry id, post id).
    async fn take_array_refreshes(
        &self,
        _consumer: &str,
        _max: usize,
        _reclaim_idle_ms: u64,
    ) -> StoreResult<Vec<(String, i64)>> {
        Ok(Vec::new())
    }

    /// Forgets refreshes that were applied.
    async fn ack_array_refreshes(&self, _entries: &[String]) -> StoreResult<()> {
        Ok(())
    }
}

/// The newest note number, and the (author, post) noted after the number
/// asked for, if the kept notes reach back that far.
pub type PulledNotes = (u64, Option<Vec<(i64, i64)>>);

/// Notes of big accounts' posts the live store keeps for pollers.
pub const PULLED_AUTHOR_HISTORY: usize = 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_repair_list_reads_back_every_key_it_stores() {
        let hash = TokenHash([0x5a; 32]);
        let keys = [
            LiveKey::Blob(BlobKey::PostBody(7)),
            LiveKey::Blob(BlobKey::CommentBody(7, 70)),
            LiveKey::Blob(BlobKey::CommentPeople(7)),
            LiveKey::Blob(BlobKey::ViewCount(7)),
            LiveKey::Blob(BlobKey::Card(3)),
            LiveKey::Blob(BlobKey::ManyBlockers(3)),
            LiveKey::Blob(BlobKey::Session(3, hash)),
            LiveKey::Set(SetKey::PostLikers(7)),
            LiveKey::Set(SetKey::PostComments(7)),
            LiveKey::Set(SetKey::CommentLikers(7, 70)),
            LiveKey::Set(SetKey::CommentReplies(7, 70)),
            LiveKey::Set(SetKey::Following(3)),
            LiveKey::Set(SetKey::Home(3)),
            LiveKey::Set(SetKey::Friends(3)),
            LiveKey::Set(SetKey::Blocking(3)),
            LiveKey::Set(SetKey::BlockedBy(3)),
            LiveKey::Set(SetKey::Muted(3)),
            LiveKey::Set(SetKey::HiddenBy(3)),
            LiveKey::Set(SetKey::LabelMembers(3, 30)),
            LiveKey::Set(SetKey::PostShares(7)),
        ];
        for key in keys {
            let owner = match key {
                LiveKey::Blob(b) => b.owner(),
                LiveKey::Set(s) => s.owner(),
            };
            assert_eq!(Owner::from_code(&owner.code()), Some(owner));
            assert_eq!(LiveKey::from_code(owner, &key.code()), Some(key), "{key:?}");
            // A code read for the other kind of owner names nothing.
            let other = match owner {
                Owner::Post(p) => Owner::User(p),
                Owner::User(u) => Owner::Post(u),
            };
            assert_eq!(LiveKey::from_code(other, &key.code()), None, "{key:?}");
        }
        assert_eq!(LiveKey::from_code(Owner::Post(1), "s:post_likers:9"), None);
        assert_eq!(LiveKey::from_code(Owner::User(1), "b:session:zz"), None);
        assert_eq!(Owner::from_code("q:1"), None);
    }
}
