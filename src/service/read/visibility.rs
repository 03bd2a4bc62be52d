//! Who may see a post, and which of what others did on it: the one place
//! every read and every write asks (single reads, feeds, albums, comment
//! and like lists, notifications, replies, likes, mentions, the fan-out).
//!
//! The rules, as WeChat Moments and Weibo keep them:
//! - the author sees their own post, and everything on it, always;
//! - nothing crosses a block, either way: not the post, and not what the
//!   other did on someone else's post. A blocker still finds the profile
//!   of whom they blocked (to undo it); the one blocked does not;
//! - an author who hides their posts from a viewer (不让他看) shows that
//!   viewer none of them, as if each were private;
//! - others see only the posts inside the author's album window (最近三天
//!   / 一个月 / 半年), counted back from now;
//! - the audience: `public` anyone, `followers` those who follow the
//!   author, `friends` mutual follows, `private` the author alone, `only`
//!   the friends the post names (directly or through one of the author's
//!   labels, as the label is now), `except` every friend but those named;
//! - in a post for friends (`friends`, `only`, `except`), a viewer other
//!   than the author sees only the likes and comments of their own friends
//!   and their own: two of the author's friends who are strangers to each
//!   other do not see each other there (WeChat's rule). Counts follow what
//!   is shown;
//! - a muted author (不看他) is kept out of the viewer's home feed only:
//!   their album and posts stay open;
//! - a post held by a content filter or removed by a moderator is its
//!   author's alone; a suspended or banned author's posts are nobody's
//!   while it lasts (their account has no card, as an erased one).
//!
//! New audience rules go here, with a row in the matrix test below.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::domain::post::Visibility;
use crate::domain::user::AlbumWindow;

use crate::service::Viewer;
use crate::store::{PostBody, SetKey, SetRead};

/// The viewer's side of the social graph, as far as reads need it: whom the
/// viewer follows, the viewer's friends (mutual follows), whom the viewer
/// blocked, who blocked the viewer (`BlockedBy`), whom the viewer muted,
/// who hide their posts from the viewer; and what was read of the authors
/// at hand (`read_author_rules`). Empty for an anonymous reader.
#[derive(Debug, Default, Clone)]
pub struct Relations {
    pub viewer: Viewer,
    /// The viewer's own sets, shared by every request that read them at
    /// the same generation (`near_cache`).
    pub sets: Arc<RelationSets>,
    /// Who blocked the viewer: `sets.blocked_by`, and what this request
    /// learned of it since (`settle_blocks`).
    pub blocked_by: BlockedBy,
    pub authors: AuthorRules,
}

/// The viewer's side of the graph as the live store holds it, built once
/// per generation of the viewer and shared.
#[derive(Debug, Default, Clone)]
pub struct RelationSets {
    pub following: HashSet<i64>,
    pub friends: HashSet<i64>,
    /// Whom the viewer blocked: whole (at most `MOMENTS_MAX_BLOCKS`).
    pub blocking: HashSet<i64>,
    pub blocked_by: BlockedBy,
    pub muted: HashSet<i64>,
    pub hidden_by: HashSet<i64>,
}

impl RelationSets {
    /// Roughly what it holds in memory, for the near cache's byte bound.
    pub fn bytes(&self) -> usize {
        let members = self.following.len()
            + self.friends.len()
            + self.blocking.len()
            + self.blocked_by.blockers.len()
            + self.muted.len()
            + self.hidden_by.len();
        // A hash set spends about twice its members' 8 bytes.
        members * 16 + 6 * 48
    }
}

/// Who blocked the viewer. Anyone can add to it, so a read takes it whole
/// only while it is small (`MOMENTS_BLOCKERS_READ_WHOLE`); past that, the
/// read asks it about the people it is about to show (`settle_blocks`),
/// and judges nobody it did not ask about.
#[derive(Debug, Default, Clone)]
pub struct BlockedBy {
    /// Blockers known to be.
    blockers: HashSet<i64>,
    /// `None`: `blockers` is all of them. Otherwise the others asked about,
    /// who did not block the viewer.
    cleared: Option<HashSet<i64>>,
}

impl BlockedBy {
    /// All of the viewer's blockers.
    pub fn whole(blockers: impl IntoIterator<Item = i64>) -> Self {
        BlockedBy {
            blockers: blockers.into_iter().collect(),
            cleared: None,
        }
    }

    /// Some of them (too many to read whole); the rest is asked for.
    pub fn some_of(blockers: impl IntoIterator<Item = i64>) -> Self {
        BlockedBy {
            blockers: blockers.into_iter().collect(),
            cleared: Some(HashSet::new()),
        }
    }

    /// Whether `uid` blocked the viewer; `None` when nobody asked.
    fn knows(&self, uid: i64) -> Option<bool> {
        if self.blockers.contains(&uid) {
            return Some(true);
        }
        match &self.cleared {
            None => Some(false),
            Some(cleared) => cleared.contains(&uid).then_some(false),
        }
    }

    /// Whether every blocker is known (none needs asking about).
    pub fn is_whole(&self) -> bool {
        self.cleared.is_none()
    }

    fn is_whole_and_empty(&self) -> bool {
        self.cleared.is_none() && self.blockers.is_empty()
    }
}

/// What `sight` needs to know of the posts' authors, beyond the viewer's
/// own sets: read per batch of posts, only where it matters.
#[derive(Debug, Default, Clone)]
pub struct AuthorRules {
    /// Epoch ms the album windows are counted back from.
    pub now: i64,
    /// Album windows of the authors whose older posts are at hand (a post
    /// younger than the narrowest window needs none).
    pub windows: HashMap<i64, AlbumWindow>,
    /// (author, label) → whether the viewer is in that label of the
    /// author's, for the labels that posts at hand name.
    pub labels: HashMap<(i64, i64), bool>,
    /// Authors found without a card: a deleted account, whose posts are
    /// gone from the moment it was deleted, however long erasing them takes.
    pub gone: HashSet<i64>,
}

impl Relations {
    /// The live sets to read for `viewer`: whole where the viewer bounds
    /// them (whom they follow, block, mute; who hide from them, only ever
    /// accounts they follow), and who blocked them as far as
    /// `MOMENTS_BLOCKERS_READ_WHOLE` (one more tells there are more).
    pub fn reads(ctx: &crate::service::Context, viewer: Viewer) -> Vec<SetRead> {
        let Some(v) = viewer else {
            return Vec::new();
        };
        let blockers_read_whole = ctx.settings.blockers_read_whole;
        let whole = usize::MAX >> 24;
        [
            (SetKey::Following(v), whole),
            (SetKey::Friends(v), whole),
            (SetKey::Blocking(v), whole),
            (SetKey::BlockedBy(v), blockers_read_whole),
            (SetKey::Muted(v), whole),
            (SetKey::HiddenBy(v), whole),
        ]
        .into_iter()
        .map(|(key, top)| SetRead {
            key,
            top,
            probe: None,
            below: None,
        })
        .collect()
    }

    /// The viewer whose relations these reads include whole (all six of
    /// `reads`), if any.
    pub fn reader_of(sets: &[SetRead]) -> Option<i64> {
        let v = sets.iter().find_map(|s| match s.key {
            SetKey::Following(v) => Some(v),
            _ => None,
        })?;
        let n = sets.iter().filter(|s| Self::is_relation_read(s, v)).count();
        (n == 6).then_some(v)
    }

    /// Whether `read` is one of `reads`'s for viewer `v`.
    pub fn is_relation_read(read: &SetRead, v: i64) -> bool {
        read.probe.is_none()
            && read.below.is_none()
            && matches!(
                read.key,
                SetKey::Following(u) | SetKey::Friends(u) | SetKey::Blocking(u)
                    | SetKey::BlockedBy(u) | SetKey::Muted(u) | SetKey::HiddenBy(u) if u == v
            )
    }

    /// Whether the viewer and `uid` are hidden from each other. Of a
    /// viewer blocked by too many to read whole, only those asked about
    /// (`settle_blocks`) are known: anyone else counts as blocked, so a
    /// read that forgot to ask hides rather than leaks.
    pub fn blocked(&self, uid: i64) -> bool {
        if Some(uid) == self.viewer {
            return false;
        }
        if self.sets.blocking.contains(&uid) {
            return true;
        }
        match self.blocked_by.knows(uid) {
            Some(known) => known,
            None => {
                debug_assert!(false, "whether {uid} blocked the viewer was not asked");
                true
            }
        }
    }

    /// Whether `uid`'s profile is not visible to the viewer: only by their
    /// block of the viewer. Whoever blocked someone still finds that
    /// profile (marked `blocking`), to see whom they blocked and to undo
    /// it; their posts stay hidden (`sight`).
    pub fn profile_not_visible(&self, uid: i64) -> bool {
        if Some(uid) == self.viewer {
            return false;
        }
        // Unasked counts as blocked, as in `blocked`: hides, never leaks.
        self.blocked_by.knows(uid).unwrap_or(true)
    }

    /// Records what was read of whether `uid` blocked the viewer.
    pub fn learn_blocked_by(&mut self, uid: i64, blocked: bool) {
        if blocked {
            self.blocked_by.blockers.insert(uid);
        } else if let Some(cleared) = self.blocked_by.cleared.as_mut() {
            cleared.insert(uid);
        }
    }

    /// Whether anyone is blocked either way, so that counts may include
    /// people this viewer must not see.
    pub fn blocks_anyone(&self) -> bool {
        !self.sets.blocking.is_empty() || !self.blocked_by.is_whole_and_empty()
    }

    /// Those of `uids` whose block of the viewer is not known yet: what
    /// `settle_blocks` asks about.
    pub(super) fn unasked(&self, uids: impl IntoIterator<Item = i64>) -> Vec<i64> {
        let mut out: Vec<i64> = uids
            .into_iter()
            .filter(|u| Some(*u) != self.viewer && self.blocked_by.knows(*u).is_none())
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether `post` is old enough for its author's album window to
    /// matter to this viewer.
    pub(super) fn needs_window(&self, post: &PostBody) -> bool {
        self.viewer != Some(post.author_uid)
            && post.createtime < self.authors.now.saturating_sub(AlbumWindow::NARROWEST_MS)
    }

    /// The labels of `post`'s author whose membership decides whether this
    /// viewer is in its audience.
    pub(super) fn labels_needed<'p>(&self, post: &'p PostBody) -> impl Iterator<Item = i64> + 'p {
        let decides = post.visibility.names_an_audience()
            && self.viewer.is_some_and(|v| v != post.author_uid)
            && self.sets.friends.contains(&post.author_uid);
        post.audience
            .as_ref()
            .filter(|_| decides)
            .map(|a| a.labels.as_slice())
            .unwrap_or_default()
            .iter()
            .copied()
    }

    /// Inside the author's album window for this viewer. An author whose
    /// window was not read counts as showing nothing: a caller that forgot
    /// `read_author_rules` hides old posts rather than leak them.
    fn inside_window(&self, post: &PostBody) -> bool {
        if !self.needs_window(post) {
            return true;
        }
        match self.authors.windows.get(&post.author_uid) {
            Some(w) => w.shows(post.createtime, self.authors.now),
            None => {
                debug_assert!(false, "album window of {} not read", post.author_uid);
                false
            }
        }
    }

    /// Whether the post's audience names the viewer, directly or through
    /// one of the author's labels; `unread` is what a label whose
    /// membership was not read counts as.
    fn named(&self, post: &PostBody, unread: bool) -> bool {
        let (Some(v), Some(audience)) = (self.viewer, post.audience.as_ref()) else {
            return false;
        };
        audience.names(v, |label| {
            match self.authors.labels.get(&(post.author_uid, label)) {
                Some(holds) => *holds,
                None => {
                    debug_assert!(false, "label {label} not read");
                    unread
                }
            }
        })
    }
}

/// What one viewer may see of one post.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sight {
    /// Not the post, nor anything on it: it answers 404.
    NotVisible,
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
    /// post for friends seen by anyone but its author).
    FriendsOnly,
}

/// May this viewer see this post, and which of its interactions.
pub fn sight(post: &PostBody, rel: &Relations) -> Sight {
    if post.deleted {
        return Sight::NotVisible;
    }
    if rel.viewer == Some(post.author_uid) {
        return Sight::Shown(Interactions::All);
    }
    if post.moderation.is_some() {
        return Sight::NotVisible;
    }
    if rel.blocked(post.author_uid)
        || rel.sets.hidden_by.contains(&post.author_uid)
        || rel.authors.gone.contains(&post.author_uid)
    {
        return Sight::NotVisible;
    }
    if !rel.inside_window(post) {
        return Sight::NotVisible;
    }
    let friend = rel.sets.friends.contains(&post.author_uid);
    let in_audience = match post.visibility {
        Visibility::Public => true,
        Visibility::Followers => rel.sets.following.contains(&post.author_uid),
        Visibility::Friends => friend,
        Visibility::Private => false,
        // An unread label counts against the viewer either way.
        Visibility::Only => friend && rel.named(post, false),
        Visibility::Except => friend && !rel.named(post, true),
    };
    match (in_audience, post.visibility) {
        (false, _) => Sight::NotVisible,
        (true, Visibility::Public | Visibility::Followers) => Sight::Shown(Interactions::All),
        (true, _) => Sight::Shown(Interactions::FriendsOnly),
    }
}

/// Where a post is being shown: the home feed leaves out muted authors,
/// nothing else does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    HomeFeed,
    Elsewhere,
}

/// `sight`, for a post shown at `place`.
pub fn sight_at(post: &PostBody, rel: &Relations, place: Place) -> Sight {
    if place == Place::HomeFeed && rel.sets.muted.contains(&post.author_uid) {
        return Sight::NotVisible;
    }
    sight(post, rel)
}

impl Sight {
    pub fn is_shown(self) -> bool {
        matches!(self, Sight::Shown(_))
    }

    /// Whether the viewer sees what `actor` did on the post (a like, a
    /// comment, a reply).
    pub fn shows_actor(self, rel: &Relations, actor: i64) -> bool {
        match self {
            Sight::NotVisible => false,
            _ if rel.blocked(actor) => false,
            Sight::Shown(Interactions::All) => true,
            Sight::Shown(Interactions::FriendsOnly) => {
                Some(actor) == rel.viewer || rel.sets.friends.contains(&actor)
            }
        }
    }

    /// Whether some of the post's interactions may be hidden from this
    /// viewer, so that its counts must be narrowed to what is shown.
    pub fn may_hide_some(self, rel: &Relations) -> bool {
        match self {
            Sight::NotVisible => true,
            Sight::Shown(Interactions::FriendsOnly) => true,
            Sight::Shown(Interactions::All) => rel.blocks_anyone(),
        }
    }
}

/// Whether the viewer sees a comment on `post`: what its author did and,
/// for a reply, the one it answers ("A 回复 B" names B), each as
/// `shows_actor` says. So two of the author's friends who are strangers
/// to each other, or across a block, do not see each other in a reply.
pub fn shows_comment(post: &PostBody, rel: &Relations, author: i64, replied: Option<i64>) -> bool {
    let sight = sight(post, rel);
    sight.shows_actor(rel, author) && replied.is_none_or(|r| sight.shows_actor(rel, r))
}

/// Whether the viewer may read `post`.
pub fn can_see(post: &PostBody, rel: &Relations) -> bool {
    sight(post, rel).is_shown()
}

/// Whether the viewer sees what `actor` did on `post`.
pub fn shows_actor(post: &PostBody, rel: &Relations, actor: i64) -> bool {
    sight(post, rel).shows_actor(rel, actor)
}

/// Whether a post can be found by its words by readers outside its
/// author's circle (the author and those who follow them, who find every
/// post of the author's they may read): only a public post of an author
/// who lets themselves be found (`UserDoc::findable`). What the search
/// index holds of each post; who may read a hit is still `sight`'s.
pub fn found_by_strangers(visibility: Visibility, author_findable: bool) -> bool {
    visibility == Visibility::Public && author_findable
}

/// Whether a reader finds an author's posts by their words at all, before
/// each is judged by `sight`: in the author's circle (the author or one
/// who follows them), every one; outside it, only if the author lets
/// themselves be found (and then only public ones, `found_by_strangers`).
pub fn finds_posts_of(in_circle: bool, author_findable: bool) -> bool {
    in_circle || author_findable
}

/// Whether a viewer whom no block keeps from an account may find it by
/// its name (a people search, or its exact username): themselves, anyone
/// if it lets itself be found, else only those who follow it.
pub fn finds_by_name(is_them: bool, follows_them: bool, findable: bool) -> bool {
    is_them || follows_them || findable
}

impl Relations {
    /// Whether the viewer may find account `uid` by its name (people
    /// search): themselves; anyone else only if no block stands between
    /// them either way, and if the account lets itself be found or the
    /// viewer follows it already. An anonymous viewer finds no one.
    pub fn finds_person(&self, uid: i64, findable: bool) -> bool {
        if self.viewer.is_none() {
            return false;
        }
        if Some(uid) == self.viewer {
            return true;
        }
        !self.blocked(uid) && finds_by_name(false, self.sets.following.contains(&uid), findable)
    }
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
        Visibility::Friends | Visibility::Only | Visibility::Except => Reach::Friends,
        Visibility::Followers | Visibility::Public => Reach::Followers,
    }
}

/// Who among those `reach` names a fan-out pushes a post to, as things
/// stand when it runs: not those the author hides posts from, and for an
/// `only` or `except` post, the named friends (labels resolved to their
/// members) or the others. Reads check again, so a label changed later
/// applies there at once.
#[derive(Debug, Clone, Default)]
pub struct PushFilter {
    /// Those the author hides their posts from.
    pub hidden: HashSet<i64>,
    /// For `only` (true) or `except` (false): whom the audience names.
    pub named: Option<(bool, HashSet<i64>)>,
}

impl PushFilter {
    pub fn admits(&self, uid: i64) -> bool {
        if self.hidden.contains(&uid) {
            return false;
        }
        match &self.named {
            Some((only, named)) => named.contains(&uid) == *only,
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::post::Audience;
    use crate::store::{PostDoc, PostModeration};

    const AUTHOR: i64 = 1;
    const VIEWER: i64 = 2;
    /// The author's label that the `only` and `except` posts name.
    const LABEL: i64 = 50;
    /// Someone the `only` and `except` posts name by uid.
    const NAMED: i64 = 60;
    const DAY: i64 = 24 * 3600 * 1000;
    const NOW: i64 = 1_000 * DAY;

    /// How the viewer stands to the author.
    #[derive(Debug, Clone, Copy, PartialEq)]
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
        /// A friend whom the viewer muted (不看他).
        MutedByViewer,
        /// A friend who hides their posts from the viewer (不让他看).
        HidingFromViewer,
        /// A friend in the author's label that the post names.
        FriendInLabel,
        /// A friend the post names by uid.
        FriendNamed,
        /// A follower (not a friend) in the label the post names.
        FollowerInLabel,
    }

    const RELATIONS: [Relation; 12] = [
        Relation::Anonymous,
        Relation::Author,
        Relation::Stranger,
        Relation::Follower,
        Relation::Friend,
        Relation::BlockedByViewer,
        Relation::BlockingViewer,
        Relation::MutedByViewer,
        Relation::HidingFromViewer,
        Relation::FriendInLabel,
        Relation::FriendNamed,
        Relation::FollowerInLabel,
    ];

    fn relations(r: Relation) -> Relations {
        use Relation::*;
        let authors = AuthorRules {
            now: NOW,
            ..AuthorRules::default()
        };
        let viewer = match r {
            Anonymous => {
                return Relations {
                    authors,
                    ..Relations::default()
                }
            }
            Author => AUTHOR,
            FriendNamed => NAMED,
            _ => VIEWER,
        };
        let mut rel = Relations {
            viewer: Some(viewer),
            authors,
            ..Relations::default()
        };
        let sets = Arc::make_mut(&mut rel.sets);
        if !matches!(r, Author | Stranger) {
            sets.following.insert(AUTHOR);
        }
        if !matches!(r, Author | Stranger | Follower | FollowerInLabel) {
            sets.friends.insert(AUTHOR);
        }
        match r {
            BlockedByViewer => {
                sets.blocking.insert(AUTHOR);
            }
            BlockingViewer => {
                rel.blocked_by = BlockedBy::whole([AUTHOR]);
            }
            MutedByViewer => {
                sets.muted.insert(AUTHOR);
            }
            HidingFromViewer => {
                sets.hidden_by.insert(AUTHOR);
            }
            _ => {}
        }
        rel.authors.labels.insert(
            (AUTHOR, LABEL),
            matches!(r, FriendInLabel | FollowerInLabel),
        );
        rel
    }

    /// Who finds the author by name (people search), by the viewer's
    /// relation and whether the author lets themselves be found.
    #[test]
    fn who_finds_a_person_by_relation_and_setting() {
        use Relation::*;
        // (relation, finds when findable, finds when not)
        let table: [(Relation, bool, bool); 12] = [
            (Anonymous, false, false),
            (Author, true, true),
            (Stranger, true, false),
            (Follower, true, true),
            (Friend, true, true),
            (BlockedByViewer, false, false),
            (BlockingViewer, false, false),
            (MutedByViewer, true, true),
            (HidingFromViewer, true, true),
            (FriendInLabel, true, true),
            (FriendNamed, true, true),
            (FollowerInLabel, true, true),
        ];
        assert_eq!(table.map(|row| row.0), RELATIONS);
        for (r, when_findable, when_not) in table {
            let rel = relations(r);
            assert_eq!(
                rel.finds_person(AUTHOR, true),
                when_findable,
                "{r:?}, findable"
            );
            assert_eq!(
                rel.finds_person(AUTHOR, false),
                when_not,
                "{r:?}, not findable"
            );
        }
    }

    #[test]
    fn posts_are_found_in_the_circle_or_of_findable_authors() {
        // (in the circle, author findable) → found
        let table = [
            ((true, true), true),
            ((true, false), true),
            ((false, true), true),
            ((false, false), false),
        ];
        for ((circle, findable), want) in table {
            assert_eq!(
                finds_posts_of(circle, findable),
                want,
                "{circle} {findable}"
            );
        }
    }

    #[test]
    fn only_public_posts_of_findable_authors_are_found_by_strangers() {
        use Visibility::*;
        for v in [Public, Followers, Friends, Private, Only, Except] {
            assert_eq!(found_by_strangers(v, true), v == Public, "{v:?}");
            assert!(!found_by_strangers(v, false), "{v:?}");
        }
    }

    fn post(visibility: Visibility, age: i64) -> PostBody {
        PostBody::from(PostDoc {
            id: 10,
            visibility,
            audience: visibility.names_an_audience().then(|| Audience {
                labels: vec![LABEL],
                uids: vec![NAMED],
            }),
            ..PostDoc::text(10, AUTHOR, "", NOW - age)
        })
    }

    /// Who sees a post, by the viewer's relation, the post's audience and
    /// the author's album window: the whole matrix. Each row says, for
    /// public, followers, friends, private, only and except, whether the
    /// viewer sees a recent post.
    #[test]
    fn who_sees_a_post_by_relation_audience_and_album_window() {
        use Relation::*;
        use Visibility::*;
        const AUDIENCES: [Visibility; 6] = [Public, Followers, Friends, Private, Only, Except];
        let table: [(Relation, [bool; 6]); 12] = [
            (Anonymous, [true, false, false, false, false, false]),
            (Author, [true, true, true, true, true, true]),
            (Stranger, [true, false, false, false, false, false]),
            (Follower, [true, true, false, false, false, false]),
            (Friend, [true, true, true, false, false, true]),
            (BlockedByViewer, [false; 6]),
            (BlockingViewer, [false; 6]),
            // Muting is the home feed's business only (below).
            (MutedByViewer, [true, true, true, false, false, true]),
            (HidingFromViewer, [false; 6]),
            (FriendInLabel, [true, true, true, false, true, false]),
            (FriendNamed, [true, true, true, false, true, false]),
            // A label names friends: a follower in it is not one.
            (FollowerInLabel, [true, true, false, false, false, false]),
        ];
        assert_eq!(table.map(|(r, _)| r), RELATIONS, "every relation has a row");
        // (window, age of the post, whether others may see it at all).
        let windows = [
            (AlbumWindow::All, 400 * DAY, true),
            (AlbumWindow::ThreeDays, DAY, true),
            (AlbumWindow::ThreeDays, 4 * DAY, false),
            (AlbumWindow::OneMonth, 20 * DAY, true),
            (AlbumWindow::OneMonth, 40 * DAY, false),
            (AlbumWindow::SixMonths, 100 * DAY, true),
            (AlbumWindow::SixMonths, 200 * DAY, false),
        ];
        for (relation, row) in table {
            for (window, age, inside) in windows {
                let mut rel = relations(relation);
                rel.authors.windows.insert(AUTHOR, window);
                for (visibility, recent) in AUDIENCES.into_iter().zip(row) {
                    let p = post(visibility, age);
                    let expected = recent && (inside || relation == Author);
                    let case = format!("{relation:?}, {visibility:?}, {window:?} at {age} ms");
                    assert_eq!(can_see(&p, &rel), expected, "{case}");
                    // The home feed also leaves out whom the viewer muted.
                    let in_feed = expected && relation != MutedByViewer;
                    assert_eq!(
                        sight_at(&p, &rel, Place::HomeFeed).is_shown(),
                        in_feed,
                        "{case}"
                    );
                    // A deleted post is nobody's, its author's neither.
                    let gone = PostBody {
                        deleted: true,
                        ..p.clone()
                    };
                    assert!(!can_see(&gone, &rel), "{case}, deleted");
                    // Held or removed by moderation: its author's alone.
                    for moderation in [PostModeration::Held, PostModeration::Removed] {
                        let moderated = PostBody {
                            moderation: Some(moderation),
                            ..p.clone()
                        };
                        assert_eq!(
                            can_see(&moderated, &rel),
                            relation == Author,
                            "{case}, {moderation:?}"
                        );
                    }
                    // Posts for friends show only friends' interactions.
                    let narrowed = sight(&p, &rel) == Sight::Shown(Interactions::FriendsOnly);
                    let for_friends = !matches!(visibility, Public | Followers);
                    assert_eq!(
                        narrowed,
                        expected && for_friends && relation != Author,
                        "{case}"
                    );
                }
            }
        }
    }

    /// Pushed to whoever may read it, of the followers: the fan-out's
    /// `reach` and `PushFilter` against `sight`, for recent posts.
    #[test]
    fn a_post_is_pushed_to_the_followers_who_may_see_it() {
        use Relation::*;
        for visibility in [
            Visibility::Public,
            Visibility::Followers,
            Visibility::Friends,
            Visibility::Private,
            Visibility::Only,
            Visibility::Except,
        ] {
            let p = post(visibility, 0);
            for relation in [
                Follower,
                Friend,
                HidingFromViewer,
                FriendInLabel,
                FriendNamed,
                FollowerInLabel,
            ] {
                let rel = relations(relation);
                let uid = rel.viewer.unwrap();
                let in_label = matches!(relation, FriendInLabel | FollowerInLabel);
                let named: HashSet<i64> =
                    [NAMED].into_iter().chain(in_label.then_some(uid)).collect();
                let filter = PushFilter {
                    hidden: (relation == HidingFromViewer)
                        .then_some(uid)
                        .into_iter()
                        .collect(),
                    named: match visibility {
                        Visibility::Only => Some((true, named)),
                        Visibility::Except => Some((false, named)),
                        _ => None,
                    },
                };
                let reached = match reach(visibility) {
                    Reach::AuthorOnly => false,
                    Reach::Friends => rel.sets.friends.contains(&AUTHOR),
                    Reach::Followers => true,
                };
                assert_eq!(
                    reached && filter.admits(uid),
                    can_see(&p, &rel),
                    "{relation:?}, {visibility:?}"
                );
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
        Arc::make_mut(&mut viewer.sets).friends.insert(FRIEND);
        Arc::make_mut(&mut viewer.sets).blocking.insert(BLOCKED);
        let author = relations(Relation::Author);
        // Shown to the viewer: the viewer, a friend, a stranger, the
        // author, a blocked user; on each audience the viewer may read.
        let table: [(Visibility, [bool; 5]); 4] = [
            (Public, [true, true, true, true, false]),
            (Followers, [true, true, true, true, false]),
            (Friends, [true, true, false, true, false]),
            (Except, [true, true, false, true, false]),
        ];
        for (visibility, row) in table {
            let p = post(visibility, 0);
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
                !matches!(visibility, Public | Followers)
            );
        }
        // Nothing on a post the viewer may not read.
        let private = post(Private, 0);
        assert!(!shows_actor(&private, &viewer, VIEWER));
    }

    /// Reading what decides the posts: nothing for recent posts without
    /// labels, the window for older ones, the labels only for friends.
    #[test]
    fn author_rules_are_needed_only_where_they_decide() {
        let friend = relations(Relation::Friend);
        let follower = relations(Relation::Follower);
        let author = relations(Relation::Author);
        assert!(!friend.needs_window(&post(Visibility::Public, DAY)));
        assert!(friend.needs_window(&post(Visibility::Public, 4 * DAY)));
        assert!(!author.needs_window(&post(Visibility::Public, 400 * DAY)));
        let only = post(Visibility::Only, 0);
        assert_eq!(friend.labels_needed(&only).collect::<Vec<_>>(), vec![LABEL]);
        assert_eq!(follower.labels_needed(&only).count(), 0);
        assert_eq!(author.labels_needed(&only).count(), 0);
        assert_eq!(
            friend.labels_needed(&post(Visibility::Friends, 0)).count(),
            0
        );
    }
}
