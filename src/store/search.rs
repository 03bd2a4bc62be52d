//! The search index: the posts a search can find, with what a search
//! filters on before any visibility check, so that a page of hits is not
//! mostly posts the reader may not see. It holds no rule of who may see
//! what: every hit is still checked by `read::visibility` when it is
//! answered, so a post deleted, hidden or blocked since it was indexed is
//! never shown, however stale the index.
//!
//! Adapters: `embedded::search` (an index in the data directory).

use async_trait::async_trait;

use super::StoreResult;

/// A post as the index holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedPost {
    pub id: i64,
    pub author: i64,
    /// Epoch ms.
    pub createtime: i64,
    pub content: String,
    /// Whether it carries uploaded pictures (`has:media`).
    pub has_media: bool,
    /// Whether anyone may find it, not only its author's circle: a public
    /// post of an account that lets itself be found.
    pub findable: bool,
}

/// A post a search found, and who wrote it: what the answer's rules
/// need before the post is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchHit {
    pub id: i64,
    pub author: i64,
}

/// A post a search found and how well it matched (BM25: rarer words and
/// more of them in a shorter text score higher).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoredHit {
    pub hit: SearchHit,
    pub score: f32,
}

/// What a search asks the index: posts holding every term, by the circle
/// or findable by anyone, within the filters, newest first below a cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostSearch {
    /// Folded terms (`domain::search_text`), all of which a hit holds;
    /// none: every post the other filters let through.
    pub terms: Vec<String>,
    /// Authors whose posts are searched whether or not findable: the
    /// reader and the people the reader follows.
    pub circle: Vec<i64>,
    /// Only this author's posts.
    pub from: Option<i64>,
    /// Epoch ms, `since <= createtime < until`.
    pub since: Option<i64>,
    pub until: Option<i64>,
    pub has_media: bool,
    /// Only posts with ids below this one (the page cursor).
    pub before: Option<i64>,
    pub limit: usize,
    /// How many of the newest matches it reaches a relevance search ranks
    /// on the embedded index, where its strong matches do not decide the
    /// page (`RELEVANCE_WINDOW` when none); OpenSearch ranks them all.
    pub window: Option<usize>,
}

/// The newest matches a relevance search ranks on the embedded index
/// unless its strong matches decide the page: the work of a search of
/// several words follows this, not the posts holding them, which anyone
/// may add to.
pub const RELEVANCE_WINDOW: usize = 2_000;

#[async_trait]
pub trait SearchIndex: Send + Sync {
    /// Adds the posts, or replaces what it held of them.
    async fn index_posts(&self, posts: &[IndexedPost]) -> StoreResult<()>;

    /// Forgets the posts; ids it never held are not an error.
    async fn remove_posts(&self, ids: &[i64]) -> StoreResult<()>;

    /// Forgets every post of these authors (an erased account's).
    async fn remove_authors(&self, uids: &[i64]) -> StoreResult<()>;

    /// Forgets everything, the mark too: indexing starts again from the
    /// first post (`moments rebuild-search`).
    async fn clear(&self) -> StoreResult<()>;

    /// The posts `search` matches, newest first.
    async fn search_posts(&self, search: &PostSearch) -> StoreResult<Vec<SearchHit>>;

    /// The `search.limit` best matches of `search` (its `before` aside),
    /// best first, and of equal scores the newest first: of every match,
    /// or of the newest `search.window` (the embedded index; see there).
    async fn search_posts_by_relevance(&self, search: &PostSearch) -> StoreResult<Vec<ScoredHit>>;

    /// The highest post id indexing has gone through in order (`mark`
    /// given to `index_posts_through`), kept across restarts; `None` for a
    /// new index.
    async fn indexed_through(&self) -> StoreResult<Option<i64>>;

    /// `index_posts`, and then records `mark` as `indexed_through`, both
    /// kept or neither.
    async fn index_posts_through(&self, posts: &[IndexedPost], mark: i64) -> StoreResult<()>;
}
