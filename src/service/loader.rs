//! Read-through loading of live state: one batched live read per call, then
//! one batched document query per kind of miss (run concurrently), then the
//! rebuilt values written back in the background. So a call costs a constant
//! number of round trips whatever the number of items, and a warm call
//! touches the live store only.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::Context;
use crate::error::AppResult;
use crate::metrics::LiveLookups;
use crate::store::{
    BlobKey, FilterKind, LikeDoc, LikeKind, LiveAnswer, LiveFill, LiveRead, LiveStore, Owner,
    PostBody, SetKey, SetRead, SetView, StoreResult,
};

#[derive(Default)]
pub struct Loaded {
    pub blobs: HashMap<BlobKey, String>,
    /// A set read more than once in one call (whole, and asked about a
    /// member) keeps its fullest view here.
    pub sets: HashMap<SetKey, SetView>,
    /// (set, member) → whether the member is in it, for every read that
    /// asked (`SetRead::probe`).
    pub probed: HashMap<(SetKey, i64), bool>,
}

impl Loaded {
    fn put_set(&mut self, read: &SetRead, view: SetView) {
        if let Some(p) = read.probe {
            self.probed
                .insert((read.key, p), view.probe_score.is_some());
        }
        match self.sets.get(&read.key) {
            Some(had) if had.top.len() >= view.top.len() => {}
            _ => {
                self.sets.insert(read.key, view);
            }
        }
    }
}

pub struct Loader<'a> {
    ctx: &'a Context,
    /// Generations read alongside the values, guarding the rebuilt values.
    gens: HashMap<Owner, u64>,
    /// False once the live store failed in this request: then nothing is
    /// written back (a guard read from a failing store proves nothing).
    live_ok: bool,
    fill: LiveFill,
    /// Users found blocked by more than are read whole, with the blocks
    /// read then: a later read of this loader asks about people without
    /// reading those again.
    blocked_by_many: HashMap<i64, Vec<crate::store::BlockDoc>>,
    pub live_round_trips: u32,
    pub doc_round_trips: u32,
}

fn view_of(mut members: Vec<(i64, i64)>, read: &SetRead) -> SetView {
    members.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    SetView {
        count: members.len() as u64,
        probe_score: read
            .probe
            .and_then(|p| members.iter().find(|(m, _)| *m == p).map(|(_, s)| *s)),
        top: members.into_iter().take(read.top).collect(),
    }
}

impl<'a> Loader<'a> {
    pub fn new(ctx: &'a Context) -> Self {
        Self {
            ctx,
            gens: HashMap::new(),
            live_ok: true,
            fill: LiveFill::default(),
            blocked_by_many: HashMap::new(),
            live_round_trips: 0,
            doc_round_trips: 0,
        }
    }

    /// Loads blobs and sets; what the live store lacks comes from the documents.
    /// Absent blobs (no such document) are simply not in the result.
    pub async fn load(&mut self, blobs: &[BlobKey], sets: &[SetRead]) -> AppResult<Loaded> {
        let mut owners: Vec<Owner> = blobs
            .iter()
            .map(|b| b.owner())
            .chain(sets.iter().map(|s| s.key.owner()))
            .filter(|o| !self.gens.contains_key(o))
            .collect();
        owners.sort_unstable();
        owners.dedup();
        let read = LiveRead {
            blobs: blobs.to_vec(),
            sets: sets.to_vec(),
            gens: owners.clone(),
            ..Default::default()
        };
        // Whether the live store answered this read: only then is an
        // absent value a miss.
        let (answer, answered) = if read.blobs.is_empty() && read.sets.is_empty() {
            (LiveAnswer::default(), false)
        } else {
            self.live_round_trips += 1;
            match self.ctx.live.read(&read).await {
                Ok(a) => (a, true),
                Err(e) => {
                    tracing::warn!(error = %e, "live read failed; answering from the documents");
                    self.live_ok = false;
                    let nothing = LiveAnswer {
                        blobs: vec![None; blobs.len()],
                        sets: vec![None; sets.len()],
                        gens: vec![0; owners.len()],
                        ..Default::default()
                    };
                    (nothing, false)
                }
            }
        };
        for (o, g) in owners.iter().zip(&answer.gens) {
            self.gens.insert(*o, *g);
        }
        // An owner whose last live update failed may hold stale values until
        // the repair task drops them: read it from the documents and write
        // nothing back (its generation guard is about to move anyway).
        let stale = |o: Owner| self.ctx.repair.is_pending(o);
        let mut stale_owners = Vec::new();
        let mut out = Loaded::default();
        let mut lookups = LiveLookups::default();
        let mut missing_blobs = Vec::new();
        for (key, value) in blobs.iter().zip(answer.blobs) {
            if stale(key.owner()) {
                stale_owners.push(key.owner());
                missing_blobs.push(*key);
                lookups.rebuilt(key.kind());
                continue;
            }
            match value {
                Some(v) => {
                    lookups.hit(key.kind());
                    out.blobs.insert(*key, v);
                }
                None if key.is_hint() => {
                    if answered {
                        lookups.miss(key.kind());
                    }
                }
                None => {
                    if answered {
                        lookups.miss(key.kind());
                    }
                    lookups.rebuilt(key.kind());
                    missing_blobs.push(*key)
                }
            }
        }
        let mut missing_sets = Vec::new();
        for (read, view) in sets.iter().zip(answer.sets) {
            if stale(read.key.owner()) {
                stale_owners.push(read.key.owner());
                missing_sets.push(*read);
                lookups.rebuilt(read.key.kind());
                continue;
            }
            match view {
                Some(v) => {
                    lookups.hit(read.key.kind());
                    out.put_set(read, v);
                }
                None => {
                    if answered {
                        lookups.miss(read.key.kind());
                    }
                    lookups.rebuilt(read.key.kind());
                    missing_sets.push(*read)
                }
            }
        }
        lookups.record();
        if !missing_blobs.is_empty() || !missing_sets.is_empty() {
            self.rebuild(&missing_blobs, &missing_sets, &mut out)
                .await?;
        }
        Ok(out)
    }

    fn guard(&self, owner: Owner) -> Option<u64> {
        self.gens.get(&owner).copied()
    }

    /// The owner's generation as read with its values, if the live store
    /// answered and the owner is not awaiting repair: what a writer passes as
    /// `expected_gen` after its document write.
    pub fn generation(&self, owner: Owner) -> Option<u64> {
        if self.live_ok {
            self.guard(owner)
        } else {
            None
        }
    }

    /// Queues a value to write back with the rebuilt ones (unguarded: for
    /// hints whose staleness costs only a round trip).
    pub fn write_back(&mut self, key: BlobKey, text: String) {
        if self.live_ok {
            self.fill.blobs.push((key, text, None));
        }
    }

    /// Forgets rebuilt values of this owner (a post that turned out missing
    /// or deleted: nothing of it is worth caching).
    pub fn discard_fills(&mut self, owner: Owner) {
        self.fill.sets.retain(|(k, ..)| k.owner() != owner);
    }

    async fn rebuild(
        &mut self,
        blobs: &[BlobKey],
        sets: &[SetRead],
        out: &mut Loaded,
    ) -> AppResult<()> {
        let docs = &self.ctx.docs;
        let rebuilds = &self.ctx.rebuilds;
        let ids = |f: &dyn Fn(&BlobKey) -> Option<i64>| -> Vec<i64> {
            let mut v: Vec<i64> = blobs.iter().filter_map(f).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let post_ids = ids(&|b| match b {
            BlobKey::PostBody(p) => Some(*p),
            _ => None,
        });
        // Comments as (post, comment): the post is the comments' shard key.
        let mut comment_ids: Vec<(i64, i64)> = blobs
            .iter()
            .filter_map(|b| match b {
                BlobKey::CommentBody(p, c) => Some((*p, *c)),
                _ => None,
            })
            .collect();
        comment_ids.sort_unstable();
        comment_ids.dedup();
        let user_ids = ids(&|b| match b {
            BlobKey::Card(u) => Some(*u),
            _ => None,
        });
        let viewed_posts = ids(&|b| match b {
            BlobKey::ViewCount(p) => Some(*p),
            _ => None,
        });
        let set_ids = |f: &dyn Fn(&SetKey) -> Option<i64>| -> Vec<i64> {
            let mut v: Vec<i64> = sets.iter().filter_map(|s| f(&s.key)).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let liked_posts = set_ids(&|k| match k {
            SetKey::PostLikers(p) => Some(*p),
            _ => None,
        });
        let commented_posts = set_ids(&|k| match k {
            SetKey::PostComments(p) => Some(*p),
            _ => None,
        });
        let liked_comments = set_ids(&|k| match k {
            SetKey::CommentLikers(_, c) => Some(*c),
            _ => None,
        });
        let mut replied_comments: Vec<(i64, i64)> = sets
            .iter()
            .filter_map(|s| match s.key {
                SetKey::CommentReplies(p, c) => Some((p, c)),
                _ => None,
            })
            .collect();
        replied_comments.sort_unstable();
        replied_comments.dedup();
        // Who hide from a reader counts only among those the reader follows
        // (a hide sleeps while its follow is gone): their followees too.
        let followers_of = set_ids(&|k| match k {
            SetKey::Following(u) | SetKey::Friends(u) | SetKey::HiddenBy(u) => Some(*u),
            _ => None,
        });
        let friends_of = set_ids(&|k| match k {
            SetKey::Friends(u) => Some(*u),
            _ => None,
        });
        let blocking_of = set_ids(&|k| match k {
            SetKey::Blocking(u) => Some(*u),
            _ => None,
        });
        let blocked_of = set_ids(&|k| match k {
            SetKey::BlockedBy(u) => Some(*u),
            _ => None,
        });
        // Of those not yet known to be blocked by too many: whose are read
        // whole (and so must be counted), and whether a rebuild found too
        // many before (the hint it left, one live read instead of the
        // documents); a read that only asks about people needs neither.
        let wants_whole = |u: &i64| {
            !self.blocked_by_many.contains_key(u)
                && sets
                    .iter()
                    .any(|s| s.key == SetKey::BlockedBy(*u) && s.top > 0)
        };
        let to_count: Vec<i64> = blocked_of.iter().copied().filter(wants_whole).collect();
        let hinted = self.hinted_many_blockers(&to_count).await;
        let blocked_unread: Vec<i64> = to_count
            .into_iter()
            .filter(|u| !hinted.contains(u))
            .collect();
        // Who blocked a user is read whole only while few: one more than
        // that says there are too many.
        let read_whole = self.ctx.settings.blockers_read_whole;
        let muted_by = set_ids(&|k| match k {
            SetKey::Muted(u) => Some(*u),
            _ => None,
        });
        let hidden_from = set_ids(&|k| match k {
            SetKey::HiddenBy(u) => Some(*u),
            _ => None,
        });
        let shared_posts = set_ids(&|k| match k {
            SetKey::PostShares(p) => Some(*p),
            _ => None,
        });
        let mut label_ids: Vec<(i64, i64)> = sets
            .iter()
            .filter_map(|s| match s.key {
                SetKey::LabelMembers(owner, label) => Some((owner, label)),
                _ => None,
            })
            .collect();
        label_ids.sort_unstable();
        label_ids.dedup();
        let calls = [
            !post_ids.is_empty(),
            !comment_ids.is_empty(),
            !user_ids.is_empty(),
            !liked_posts.is_empty(),
            !commented_posts.is_empty(),
            !liked_comments.is_empty(),
            !replied_comments.is_empty(),
            !followers_of.is_empty(),
            !blocking_of.is_empty(),
            !muted_by.is_empty(),
            !label_ids.is_empty(),
            !shared_posts.is_empty(),
            !viewed_posts.is_empty(),
        ];
        self.doc_round_trips +=
            calls.iter().filter(|c| **c).count() as u32 + blocked_unread.len() as u32;
        let (
            posts,
            comments,
            users,
            post_likes,
            post_comments,
            comment_likes,
            replies,
            follows,
            blocks,
            blockers,
            mutes,
            labels,
            shares,
            view_counts,
        ) = tokio::try_join!(
            docs.posts_by_ids(&post_ids),
            docs.comments_by_ids(&comment_ids),
            docs.users_by_ids(&user_ids),
            rebuilds.likes_of_targets(docs, LikeKind::Post, &liked_posts),
            rebuilds.comment_ids_of_posts(docs, &commented_posts),
            rebuilds.likes_of_targets(docs, LikeKind::Comment, &liked_comments),
            rebuilds.reply_ids_of_comments(docs, &replied_comments),
            docs.follows_from(&followers_of),
            docs.blocks_by(&blocking_of),
            futures_util::future::try_join_all(
                blocked_unread
                    .iter()
                    .map(|u| docs.blockers_of(*u, read_whole + 1))
            ),
            docs.filters_set_by(FilterKind::Mute, &muted_by),
            docs.labels_by_ids(&label_ids),
            rebuilds.share_ids_of_posts(docs, &shared_posts),
            docs.view_counts(&viewed_posts),
        )?;
        let followees_of = |u: i64| -> Vec<i64> {
            follows
                .iter()
                .filter(|f| f.follower == u)
                .map(|f| f.followee)
                .collect()
        };
        let mut hides = Vec::new();
        for u in &hidden_from {
            let followees = followees_of(*u);
            self.doc_round_trips += u32::from(!followees.is_empty());
            hides.extend(
                docs.filters_on_from(FilterKind::Hide, *u, &followees)
                    .await?,
            );
        }
        // Friends are the followees who follow back: one more query per user
        // asked for (a request asks for its viewer's only).
        let mut friends: Vec<(i64, i64, i64)> = Vec::new();
        for u in &friends_of {
            let followees: Vec<(i64, i64)> = follows
                .iter()
                .filter(|f| f.follower == *u)
                .map(|f| (f.followee, f.id))
                .collect();
            let ids: Vec<i64> = followees.iter().map(|f| f.0).collect();
            self.doc_round_trips += u32::from(!ids.is_empty());
            let (_, back) = docs.follow_edges(*u, &ids).await?;
            friends.extend(
                followees
                    .into_iter()
                    .filter(|(f, _)| back.contains(f))
                    .map(|(f, edge)| (*u, f, edge)),
            );
        }

        let mut put = |key: BlobKey, text: String, guard: Option<u64>, out: &mut Loaded| {
            self.fill.blobs.push((key, text.clone(), guard));
            out.blobs.insert(key, text);
        };
        for p in posts {
            let key = BlobKey::PostBody(p.id);
            let guard = self.gens.get(&key.owner()).copied();
            if let Some(g) = guard {
                put(key, to_json(&PostBody::from(p))?, Some(g), out);
            } else {
                out.blobs.insert(key, to_json(&PostBody::from(p))?);
            }
        }
        for (post, n) in view_counts {
            let key = BlobKey::ViewCount(post);
            let guard = self.gens.get(&key.owner()).copied();
            put(key, n.to_string(), guard, out);
        }
        for c in comments {
            // Comment bodies never change (deletion removes them from the
            // comment set instead), so they are written unguarded.
            let key = BlobKey::CommentBody(c.post_id, c.id);
            if blobs.contains(&key) {
                put(key, to_json(&c)?, None, out);
            }
        }
        // An erased account has no card: reads leave out what it did, and
        // its profile is not found.
        for u in users.into_iter().filter(|u| !u.is_erased()) {
            let key = BlobKey::Card(u.uid);
            let card = to_json(&u.cached_card())?;
            match self.gens.get(&key.owner()).copied() {
                Some(g) => put(key, card, Some(g), out),
                None => {
                    out.blobs.insert(key, card);
                }
            }
        }

        let mut members: HashMap<SetKey, Vec<(i64, i64)>> = HashMap::new();
        let wanted: HashSet<SetKey> = sets.iter().map(|s| s.key).collect();
        let like_member = |l: &LikeDoc| (l.uid, l.id);
        // Sets rebuilt from a read another request ran are written back by
        // that request: one write of a viral post's likers, not one per reader.
        let followed = |key: &SetKey| match key {
            SetKey::PostLikers(_) => !post_likes.led,
            SetKey::PostComments(_) => !post_comments.led,
            SetKey::CommentLikers(..) => !comment_likes.led,
            SetKey::CommentReplies(..) => !replies.led,
            SetKey::PostShares(_) => !shares.led,
            _ => false,
        };
        for l in post_likes.value.iter() {
            members
                .entry(SetKey::PostLikers(l.target_id))
                .or_default()
                .push(like_member(l));
        }
        for &(post, cid) in post_comments.value.iter() {
            members
                .entry(SetKey::PostComments(post))
                .or_default()
                .push((cid, cid));
        }
        // Comment-level sets are keyed under their post; map comment → post
        // from what was asked for.
        let comment_post: HashMap<i64, i64> = sets
            .iter()
            .filter_map(|s| match s.key {
                SetKey::CommentLikers(p, c) | SetKey::CommentReplies(p, c) => Some((c, p)),
                _ => None,
            })
            .collect();
        for l in comment_likes.value.iter() {
            if let Some(p) = comment_post.get(&l.target_id) {
                members
                    .entry(SetKey::CommentLikers(*p, l.target_id))
                    .or_default()
                    .push(like_member(l));
            }
        }
        for &(parent, reply) in replies.value.iter() {
            if let Some(p) = comment_post.get(&parent) {
                members
                    .entry(SetKey::CommentReplies(*p, parent))
                    .or_default()
                    .push((reply, reply));
            }
        }
        for f in &follows {
            members
                .entry(SetKey::Following(f.follower))
                .or_default()
                .push((f.followee, f.id));
        }
        for (u, friend, edge) in friends {
            members
                .entry(SetKey::Friends(u))
                .or_default()
                .push((friend, edge));
        }
        for b in &blocks {
            members
                .entry(SetKey::Blocking(b.blocker))
                .or_default()
                .push((b.blocked, b.id));
        }
        // Those blocked by more than are read whole: not built (a set is
        // whole or absent), and the people asked about are looked up
        // instead, each read by the blockers' own shard.
        let mut too_many: HashMap<SetKey, HashSet<i64>> = HashMap::new();
        let mut just_read: HashMap<i64, Vec<crate::store::BlockDoc>> =
            blocked_unread.iter().copied().zip(blockers).collect();
        for u in &blocked_of {
            let key = SetKey::BlockedBy(*u);
            let counted = just_read.remove(u);
            let many = match &counted {
                Some(found) => found.len() > read_whole,
                None => true,
            };
            let found = counted
                .or_else(|| self.blocked_by_many.get(u).cloned())
                .unwrap_or_default();
            if many {
                if !self.blocked_by_many.contains_key(u) && !hinted.contains(u) {
                    self.write_back(BlobKey::ManyBlockers(*u), "1".into());
                }
                self.blocked_by_many.insert(*u, found.clone());
                let asked: Vec<i64> = sets
                    .iter()
                    .filter(|s| s.key == key)
                    .filter_map(|s| s.probe)
                    .collect();
                self.doc_round_trips += u32::from(!asked.is_empty());
                let among = docs.blockers_among(*u, &asked).await?;
                too_many.insert(key, among.into_iter().collect());
            }
            members
                .entry(key)
                .or_default()
                .extend(found.iter().map(|b| (b.blocker, b.id)));
        }
        for f in &mutes {
            members
                .entry(SetKey::Muted(f.uid))
                .or_default()
                .push((f.other, f.id));
        }
        for f in &hides {
            members
                .entry(SetKey::HiddenBy(f.other))
                .or_default()
                .push((f.uid, f.id));
        }
        for &(post, share) in shares.value.iter() {
            members
                .entry(SetKey::PostShares(post))
                .or_default()
                .push((share, share));
        }
        for l in &labels {
            members.insert(
                SetKey::LabelMembers(l.owner, l.id),
                l.members.iter().map(|m| (*m, 0)).collect(),
            );
        }
        // A key may be asked for more than once in one call; fill it once.
        let mut filled: HashSet<SetKey> = HashSet::new();
        for read in sets {
            if let SetKey::Home(_) = read.key {
                // Timelines are rebuilt by the timeline service, which knows
                // the followees; an empty one must never be stored here.
                out.sets.insert(read.key, SetView::default());
                continue;
            }
            let m = members.get(&read.key).cloned().unwrap_or_default();
            if let Some(blockers) = too_many.get(&read.key) {
                let view = SetView {
                    // More than are read whole, whatever of them was read.
                    count: (read_whole as u64 + 1).max(m.len() as u64),
                    probe_score: read.probe.filter(|p| blockers.contains(p)),
                    top: m.into_iter().take(read.top).collect(),
                };
                out.put_set(read, view);
                continue;
            }
            if let (true, Some(g)) = (wanted.contains(&read.key), self.guard(read.key.owner())) {
                if self.live_ok && !followed(&read.key) && filled.insert(read.key) {
                    self.fill.sets.push((read.key, m.clone(), g));
                }
            }
            out.put_set(read, view_of(m, read));
        }
        if !self.live_ok {
            self.fill = LiveFill::default();
        }
        Ok(())
    }

    /// Which of these users a rebuild found blocked by too many to read
    /// whole (`BlobKey::ManyBlockers`); none when the live store fails.
    async fn hinted_many_blockers(&mut self, uids: &[i64]) -> HashSet<i64> {
        if uids.is_empty() || !self.live_ok {
            return HashSet::new();
        }
        let read = LiveRead {
            blobs: uids.iter().map(|u| BlobKey::ManyBlockers(*u)).collect(),
            ..Default::default()
        };
        self.live_round_trips += 1;
        match self.ctx.live.read(&read).await {
            Ok(answer) => uids
                .iter()
                .zip(answer.blobs)
                .filter(|(_, hint)| hint.is_some())
                .map(|(u, _)| *u)
                .collect(),
            Err(_) => HashSet::new(),
        }
    }

    /// Writes what was rebuilt back to the live store, off the request's path.
    pub fn finish(self, what: &'static str) {
        tracing::debug!(
            what,
            live_round_trips = self.live_round_trips,
            doc_round_trips = self.doc_round_trips,
            "store round trips"
        );
        if self.fill.is_empty() || !self.live_ok {
            return;
        }
        let live: Arc<dyn LiveStore> = self.ctx.live.clone();
        let fill = self.fill;
        tokio::spawn(async move {
            let r: StoreResult<()> = live.fill(&fill).await;
            if let Err(e) = r {
                tracing::warn!(error = %e, "writing rebuilt live state failed");
            }
        });
    }
}

pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> AppResult<String> {
    serde_json::to_string(v).map_err(|e| crate::error::AppError::Internal(e.into()))
}

pub(crate) fn from_json<T: serde::de::DeserializeOwned>(s: &str) -> AppResult<T> {
    serde_json::from_str(s).map_err(|e| crate::error::AppError::Internal(e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebuilt_views_order_newest_first_and_probe_the_viewer() {
        let read = SetRead {
            key: SetKey::PostLikers(1),
            top: 2,
            probe: Some(7),
            below: None,
        };
        let v = view_of(vec![(5, 100), (7, 300), (9, 200)], &read);
        assert_eq!(v.count, 3);
        assert_eq!(v.top, vec![(7, 300), (9, 200)]);
        assert_eq!(v.probe_score, Some(300));
        let none = view_of(vec![], &read);
        assert_eq!((none.count, none.probe_score), (0, None));
    }
}
