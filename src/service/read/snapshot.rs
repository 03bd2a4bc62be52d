//! What a post is made of for every reader alike, as one generation of it
//! has it (`PostSnapshot`), and the JSON template made from it once
//! (`PostTemplate`, written and filled by `post_json`). Below the reads
//! that make, keep and fill them (`assemble`, `loader`, `near_cache`,
//! `post_json`), which all need them.

use crate::store::{CommentDoc, PostBody, SetView};

pub const LATEST_COMMENTS: usize = 5;
pub const LATEST_LIKES: usize = 20;

/// One comment with its live sets.
#[derive(Debug, Clone)]
pub struct CommentParts {
    pub doc: CommentDoc,
    pub likers: SetView,
    pub replies: SetView,
}

/// Everything one expanded post is made of, already loaded and narrowed
/// to what its reader may see: what a read that keeps no snapshot writes
/// the post from (`post_json::write_post`).
#[derive(Debug, Clone)]
pub struct PostParts {
    pub body: PostBody,
    /// The likers shown and the count; `probe_score` says whether the
    /// reader is one.
    pub likers: SetView,
    pub comment_count: u64,
    pub share_count: u64,
    pub view_count: u64,
    /// The latest comments, newest first; each one's `likers.probe_score`
    /// says whether the reader liked it.
    pub comments: Vec<CommentParts>,
}

impl PostParts {
    pub fn source(&self) -> PostSource<'_> {
        PostSource {
            body: &self.body,
            likers: &self.likers,
            comment_count: self.comment_count,
            share_count: self.share_count,
            view_count: self.view_count,
            comments: &self.comments,
        }
    }
}

/// What the JSON of an expanded post is written from, borrowed from a
/// snapshot or from a post's parts: one writer serves both reads.
#[derive(Debug, Clone, Copy)]
pub struct PostSource<'a> {
    pub body: &'a PostBody,
    pub likers: &'a SetView,
    pub comment_count: u64,
    pub share_count: u64,
    pub view_count: u64,
    pub comments: &'a [CommentParts],
}

/// One post's viewer-independent parts as one generation of it has them:
/// what a page's first two rounds read for it (its body, counts, newest
/// likers, latest comments with theirs), kept in the near cache so that a
/// warm page reads only the post's generation. Each viewer's part is added
/// on every read: whether they liked it and its comments (from the likers
/// kept, where those are every liker, else asked of the live store), what
/// a block hides, the author-only audience, the times.
#[derive(Debug, Clone)]
pub struct PostSnapshot {
    pub body: PostBody,
    /// The newest likers (at least [`LATEST_LIKES`]) and the count; every
    /// liker when the count is no more.
    pub likers: SetView,
    /// The latest [`LATEST_COMMENTS`] comment ids and the count.
    pub comment_ids: SetView,
    pub share_count: u64,
    pub view_count: u64,
    /// The latest comments, newest first, their likers as `likers` holds
    /// the post's.
    pub comments: Vec<CommentParts>,
    /// Everyone whose card the post shows: its author, the latest likers,
    /// the comments' authors and whom they reply to.
    pub people: Vec<i64>,
    /// Its JSON with holes for each reader's part, made on the first read
    /// that can (`post_json`).
    pub template: std::sync::OnceLock<PostTemplate>,
}

impl PostSnapshot {
    pub fn source(&self) -> PostSource<'_> {
        PostSource {
            body: &self.body,
            likers: &self.likers,
            comment_count: self.comment_ids.count,
            share_count: self.share_count,
            view_count: self.view_count,
            comments: &self.comments,
        }
    }

    /// Roughly what it holds in memory, for the near cache's byte bound.
    pub fn bytes(&self) -> usize {
        let b = &self.body;
        let body = b.content.len()
            + b.device.len()
            + b.picture_urls.iter().map(|u| u.len() + 24).sum::<usize>()
            + 160;
        let comments: usize = self
            .comments
            .iter()
            .map(|c| c.doc.content.len() + 160 + 16 * c.likers.top.len())
            .sum();
        body + comments
            + 16 * (self.likers.top.len() + self.comment_ids.top.len())
            + 8 * self.people.len()
    }
}

/// What a template leaves for each read to fill.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Hole {
    /// `,"createtimeText":"…"` (or `createTimeText`) for this instant, in
    /// the reader's language and zone; nothing when they asked for none.
    TimeText {
        at: i64,
        camel_time: bool,
    },
    /// The device's display name in the reader's language, as a string.
    Device,
    /// `,"audience":{…}` for the post's author; nothing for anyone else.
    Audience,
    /// Whether the reader liked the post.
    LikedByMe,
    /// Whether the reader liked the comment at this index.
    CommentLikedByMe(usize),
    ServerTime,
}

/// A post's text with its holes: `text[..holes[0].0]`, the first hole,
/// and so on.
#[derive(Debug, Clone)]
pub struct PostTemplate {
    pub(super) text: Vec<u8>,
    pub(super) holes: Vec<(usize, Hole)>,
    /// The generation of each person whose card it shows, as it was made:
    /// it stands while each is unchanged.
    pub(super) cards: Vec<(i64, u64)>,
}
