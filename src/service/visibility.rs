//! Who may see a post, and which of what others did on it: the one place
//! every read and every write asks (single reads, feeds, albums, comment
//! and like lists, notifications, replies, likes, the fan-out).
//!
//! The rules, as WeChat Moments and Weibo keep them:
//! - the author sees their own post, and everything on it, always;
//! - nothing crosses a block, either way: not the post, and not what the
//!   other did on someone else's post;
//! - the audience: `public` anyone, `followers` those who follow the
//!   author, `friends` mutual follows, `private` the author alone;
//! - in a friends-only post, a viewer other than the author sees only the
//!   likes and comments of their own friends and their own: two of the
//!   author's friends who are strangers to each other do not see each
//!   other there (WeChat's rule). Counts follow what is shown.
//!
//! New audience rules go here, with a row in the matrix test below.

use std::collections::HashSet;

use super::{loader, Viewer};
use crate::domain::post::Visibility;
use crate::store::{PostBody, SetKey, SetRead};

/// The viewer's side of the social graph, as far as reads need it: whom the
/// viewer follows, the viewer's friends (mutual follows), and everyone the
/// viewer blocked or was blocked by. Empty for an anonymous reader.
#[derive(Debug, Default, Clone)]
pub struct Relations {
    pub viewer: Viewer,
    pub following: HashSet<i64>,
    pub friends: HashSet<i64>,
    pub blocks: HashSet<i64>,
}

impl Relations {
    /// The live sets to read for `viewer` (whole: a user's own relations are
    /// bounded by whom they follow and block).
    pub fn reads(viewer: Viewer) -> Vec<SetRead> {
        let Some(v) = viewer else {
            return Vec::new();
        };
        [SetKey::Following(v), SetKey::Friends(v), SetKey::Blocks(v)]
            .into_iter()
            .map(|key| SetRead {
                key,
                top: usize::MAX >> 24,
                probe: None,
                below: None,
            })
            .collect()
    }

    pub fn from_loaded(viewer: Viewer, loaded: &loader::Loaded) -> Self {
        let Some(v) = viewer else {
            return Relations::default();
        };
        let members = |key: SetKey| -> HashSet<i64> {
            loaded
                .sets
                .get(&key)
                .map(|view| view.top.iter().map(|(m, _)| *m).collect())
                .unwrap_or_default()
        };
        Relations {
            viewer,
            following: members(SetKey::Following(v)),
            friends: members(SetKey::Friends(v)),
            blocks: members(SetKey::Blocks(v)),
        }
    }

    /// Whether the viewer and `uid` are hidden from each other.
    pub fn blocked(&self, uid: i64) -> bool {
        self.blocks.contains(&uid)
    }
}

/// What one viewer may see of one post.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sight {
    /// Not the post, nor anything on it: it answers 404.
    Hidden,
    /// The post, and the interactions `Interactions` says.
    Shown(Interactions),
}

/// Which likes and comments on a shown post the viewer sees (blocks aside,
/// which always hide their side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interactions {
    /// Everyone's.
    All,
    /// Only the viewer's friends' and the viewer's own (WeChat's rule for a
    /// friends-only post seen by anyone but its author).
    FriendsOnly,
}

/// May this viewer see this post, and which of its interactions.
pub fn sight(post: &PostBody, rel: &Relations) -> Sight {
    if post.deleted {
        return Sight::Hidden;
    }
    if rel.viewer == Some(post.author_uid) {
        return Sight::Shown(Interactions::All);
    }
    if rel.blocked(post.author_uid) {
        return Sight::Hidden;
    }
    let in_audience = match post.visibility {
        Visibility::Public => true,
        Visibility::Followers => rel.following.contains(&post.author_uid),
        Visibility::Friends => rel.friends.contains(&post.author_uid),
        Visibility::Private => false,
    };
    match (in_audience, post.visibility) {
        (false, _) => Sight::Hidden,
        (true, Visibility::Friends) => Sight::Shown(Interactions::FriendsOnly),
        (true, _) => Sight::Shown(Interactions::All),
    }
}

impl Sight {
    pub fn is_shown(self) -> bool {
        matches!(self, Sight::Shown(_))
    }

    /// Whether the viewer sees what `actor` did on the post (a like, a
    /// comment, a reply).
    pub fn shows_actor(self, rel: &Relations, actor: i64) -> bool {
        match self {
            Sight::Hidden => false,
            _ if rel.blocked(actor) => false,
            Sight::Shown(Interactions::All) => true,
            Sight::Shown(Interactions::FriendsOnly) => {
                Some(actor) == rel.viewer || rel.friends.contains(&actor)
            }
        }
    }

    /// Whether some of the post's interactions may be hidden from this
    /// viewer, so that its counts must be narrowed to what is shown.
    pub fn may_hide_some(self, rel: &Relations) -> bool {
        match self {
            Sight::Hidden => true,
            Sight::Shown(Interactions::FriendsOnly) => true,
            Sight::Shown(Interactions::All) => !rel.blocks.is_empty(),
        }
    }
}

/// Whether the viewer may read `post`.
pub fn can_see(post: &PostBody, rel: &Relations) -> bool {
    sight(post, rel).is_shown()
}

/// Whether the viewer sees what `actor` did on `post`.
pub fn shows_actor(post: &PostBody, rel: &Relations, actor: i64) -> bool {
    sight(post, rel).shows_actor(rel, actor)
}

/// Whose home feeds a new post is pushed to: the same audience `sight`
/// lets read it (a follower outside it would only have it filtered out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    AuthorOnly,
    /// The followers the author follows back.
    Friends,
    Followers,
}

pub fn reach(visibility: Visibility) -> Reach {
    match visibility {
        Visibility::Private => Reach::AuthorOnly,
        Visibility::Friends => Reach::Friends,
        Visibility::Followers | Visibility::Public => Reach::Followers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::post::Category;

    const AUTHOR: i64 = 1;
    const VIEWER: i64 = 2;

    /// How the viewer stands to the author.
    #[derive(Debug, Clone, Copy)]
    enum Relation {
        Anonymous,
        Author,
        Stranger,
        Follower,
        Friend,
        /// A friend the viewer has blocked.
        BlockedByViewer,
        /// A friend who has blocked the viewer (blocks are read both ways).
        BlockingViewer,
    }

    fn relations(r: Relation) -> Relations {
        let viewer = match r {
            Relation::Anonymous => return Relations::default(),
            Relation::Author => AUTHOR,
            _ => VIEWER,
        };
        let mut rel = Relations {
            viewer: Some(viewer),
            ..Relations::default()
        };
        match r {
            Relation::Follower => {
                rel.following.insert(AUTHOR);
            }
            Relation::Friend | Relation::BlockedByViewer | Relation::BlockingViewer => {
                rel.following.insert(AUTHOR);
                rel.friends.insert(AUTHOR);
            }
            _ => {}
        }
        if matches!(r, Relation::BlockedByViewer | Relation::BlockingViewer) {
            rel.blocks.insert(AUTHOR);
        }
        rel
    }

    fn post(visibility: Visibility, deleted: bool) -> PostBody {
        PostBody {
            id: 10,
            author_uid: AUTHOR,
            category: Category::Text,
            content: String::new(),
            picture_urls: vec![],
            device: String::new(),
            geo: None,
            visibility,
            createtime: 0,
            deleted,
        }
    }

    #[test]
    fn who_sees_a_post_by_relation_and_audience() {
        use Relation::*;
        use Visibility::*;
        // Visible to: public, followers, friends, private.
        let table: [(Relation, [bool; 4]); 7] = [
            (Anonymous, [true, false, false, false]),
            (Author, [true, true, true, true]),
            (Stranger, [true, false, false, false]),
            (Follower, [true, true, false, false]),
            (Friend, [true, true, true, false]),
            (BlockedByViewer, [false, false, false, false]),
            (BlockingViewer, [false, false, false, false]),
        ];
        for (relation, row) in table {
            let rel = relations(relation);
            for (visibility, expected) in [Public, Followers, Friends, Private].into_iter().zip(row)
            {
                let p = post(visibility, false);
                assert_eq!(
                    can_see(&p, &rel),
                    expected,
                    "{relation:?} on a {visibility:?} post"
                );
                // A deleted post is nobody's, its author's neither.
                assert!(!can_see(&post(visibility, true), &rel));
                // Pushed to whoever may read it (among followers).
                let pushed = match reach(visibility) {
                    Reach::AuthorOnly => matches!(relation, Author),
                    Reach::Friends => matches!(relation, Author | Friend),
                    Reach::Followers => matches!(relation, Author | Follower | Friend),
                };
                if matches!(relation, Author | Follower | Friend) {
                    assert_eq!(pushed, expected, "pushed to {relation:?}, {visibility:?}");
                }
            }
        }
    }

    #[test]
    fn whose_likes_and_comments_a_viewer_sees() {
        use Visibility::*;
        const FRIEND: i64 = 3; // the viewer's friend
        const OTHER: i64 = 4; // the author's friend, a stranger to the viewer
        const BLOCKED: i64 = 5; // blocked by (or blocking) the viewer
        let mut viewer = relations(Relation::Friend);
        viewer.friends.insert(FRIEND);
        viewer.blocks.insert(BLOCKED);
        let author = relations(Relation::Author);
        // Shown to the viewer: the viewer, a friend, a stranger, the
        // author, a blocked user; on each audience the viewer may read.
        let table: [(Visibility, [bool; 5]); 3] = [
            (Public, [true, true, true, true, false]),
            (Followers, [true, true, true, true, false]),
            (Friends, [true, true, false, true, false]),
        ];
        for (visibility, row) in table {
            let p = post(visibility, false);
            for (actor, expected) in [VIEWER, FRIEND, OTHER, AUTHOR, BLOCKED]
                .into_iter()
                .zip(row)
            {
                assert_eq!(
                    shows_actor(&p, &viewer, actor),
                    expected,
                    "actor {actor} on a {visibility:?} post"
                );
                // The author sees everyone's.
                assert!(shows_actor(&p, &author, actor), "author, actor {actor}");
            }
            let sight = sight(&p, &viewer);
            assert!(sight.may_hide_some(&viewer), "the viewer blocks someone");
            assert_eq!(
                sight.may_hide_some(&relations(Relation::Friend)),
                visibility == Friends
            );
        }
        // Nothing on a post the viewer may not read.
        let private = post(Private, false);
        assert!(!shows_actor(&private, &viewer, VIEWER));
    }
}
