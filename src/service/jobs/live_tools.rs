//! Repair tools for the live state: recompute it from the documents, or
//! compare it with them. Both walk every live post and user in batches, so
//! each batch costs a fixed number of round trips, and both are safe while
//! the service runs: rebuilt values are written under the same generation
//! guards as the read path's, so a write that lands meanwhile wins.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::store::{
    BlobKey, CachedCard, Changes, CommentDoc, DocStore, LikeKind, LiveChange, LiveFill, LiveKey,
    LiveRead, LiveStore, Owner, PostBody, SetKey, SetRead, StoreResult,
};

use crate::service::read::snapshot::LATEST_COMMENTS;

const BATCH: usize = 100;
/// "All members" for a set read.
const ALL: usize = 1 << 40;

#[derive(Debug, Default, Serialize, utoipa::ToSchema)]
pub struct RebuildReport {
    pub posts: u64,
    pub users: u64,
}

#[derive(Debug, Default, Serialize, utoipa::ToSchema)]
pub struct CheckReport {
    pub posts: u64,
    pub users: u64,
    /// Live keys not present: not an error, the next read rebuilds them.
    pub absent: u64,
    /// One line per live value that disagrees with the documents.
    pub mismatches: Vec<String>,
}

/// What the documents say a batch of posts' live state should be.
struct Derived {
    bodies: Vec<PostBody>,
    sets: Vec<(SetKey, Vec<(i64, i64)>)>,
    latest: Vec<CommentDoc>,
}

async fn derive(docs: &dyn DocStore, post_ids: &[i64]) -> StoreResult<Derived> {
    let (posts, post_likes, comment_pairs) = tokio::try_join!(
        docs.posts_by_ids(post_ids),
        docs.likes_of_targets(LikeKind::Post, post_ids),
        docs.comment_ids_of_posts(post_ids),
    )?;
    let comment_ids: Vec<i64> = comment_pairs.iter().map(|(_, c)| *c).collect();
    let post_of: HashMap<i64, i64> = comment_pairs.iter().map(|(p, c)| (*c, *p)).collect();
    let mut by_post: HashMap<i64, Vec<i64>> = HashMap::new();
    for (p, c) in &comment_pairs {
        by_post.entry(*p).or_default().push(*c);
    }
    let mut latest_ids = Vec::new();
    for (post, ids) in by_post.iter_mut() {
        ids.sort_unstable_by(|a, b| b.cmp(a));
        latest_ids.extend(ids.iter().take(LATEST_COMMENTS).map(|c| (*post, *c)));
    }
    let (comment_likes, replies, latest) = tokio::try_join!(
        docs.likes_of_targets(LikeKind::Comment, &comment_ids),
        docs.reply_ids_of_comments(&comment_pairs),
        docs.comments_by_ids(&latest_ids),
    )?;

    let mut sets: HashMap<SetKey, Vec<(i64, i64)>> = HashMap::new();
    for p in post_ids {
        sets.insert(SetKey::PostLikers(*p), Vec::new());
        sets.insert(SetKey::PostComments(*p), Vec::new());
    }
    for (p, c) in &comment_pairs {
        sets.entry(SetKey::PostComments(*p))
            .or_default()
            .push((*c, *c));
        sets.insert(SetKey::CommentLikers(*p, *c), Vec::new());
        sets.insert(SetKey::CommentReplies(*p, *c), Vec::new());
    }
    for l in post_likes {
        sets.entry(SetKey::PostLikers(l.target_id))
            .or_default()
            .push((l.uid, l.id));
    }
    for l in comment_likes {
        if let Some(p) = post_of.get(&l.target_id) {
            sets.entry(SetKey::CommentLikers(*p, l.target_id))
                .or_default()
                .push((l.uid, l.id));
        }
    }
    for (parent, reply) in replies {
        if let Some(p) = post_of.get(&parent) {
            sets.entry(SetKey::CommentReplies(*p, parent))
                .or_default()
                .push((reply, reply));
        }
    }
    Ok(Derived {
        bodies: posts.into_iter().map(PostBody::from).collect(),
        sets: sets.into_iter().collect(),
        latest,
    })
}

fn json<T: Serialize>(v: &T) -> StoreResult<String> {
    serde_json::to_string(v).map_err(|e| crate::store::StoreError::Other(e.into()))
}

async fn generations(live: &dyn LiveStore, owners: Vec<Owner>) -> StoreResult<HashMap<Owner, u64>> {
    let answer = live
        .read(&LiveRead {
            gens: owners.clone(),
            ..Default::default()
        })
        .await?;
    Ok(owners.into_iter().zip(answer.gens).collect())
}

/// Recomputes every live key from the documents. `progress` hears how many
/// posts and users each batch covered.
pub async fn rebuild_live(
    docs: &dyn DocStore,
    live: &dyn LiveStore,
    mut progress: impl FnMut(u64),
) -> StoreResult<RebuildReport> {
    let mut report = RebuildReport::default();
    let mut after = None;
    loop {
        let ids = docs.post_ids_after(after, BATCH).await?;
        let Some(last) = ids.last().copied() else {
            break;
        };
        // A rebuild of a last-writer-wins set merges into what is there,
        // so drifted ones are dropped first (then the merge keeps only the
        // changes made while the documents are read again).
        // Every post's body goes too, so that its generation moves and no
        // instance keeps serving a drifted copy (`service::read::near_cache`).
        let mut by_owner: HashMap<Owner, Vec<LiveKey>> = ids
            .iter()
            .map(|p| (Owner::Post(*p), vec![LiveKey::Blob(BlobKey::PostBody(*p))]))
            .collect();
        for (key, _) in derive(docs, &ids).await?.sets {
            if key.is_last_writer_wins() {
                by_owner
                    .entry(key.owner())
                    .or_default()
                    .push(LiveKey::Set(key));
            }
        }
        for (owner, keys) in by_owner {
            live.drop_keys(owner, &keys).await?;
        }
        // Generations first, documents second: the guard order of the read path.
        let gens = generations(live, ids.iter().map(|p| Owner::Post(*p)).collect()).await?;
        let derived = derive(docs, &ids).await?;
        let mut fill = LiveFill::default();
        for b in &derived.bodies {
            fill.blobs.push((
                BlobKey::PostBody(b.id),
                json(b)?,
                gens.get(&Owner::Post(b.id)).copied(),
            ));
        }
        for c in &derived.latest {
            fill.blobs
                .push((BlobKey::CommentBody(c.post_id, c.id), json(c)?, None));
        }
        for (key, members) in derived.sets {
            if let Some(g) = gens.get(&key.owner()) {
                fill.sets.push((key, members, *g));
            }
        }
        live.fill(&fill).await?;
        report.posts += ids.len() as u64;
        progress(ids.len() as u64);
        after = Some(last);
    }
    let mut after = None;
    loop {
        let uids = docs.user_ids_after(after, BATCH).await?;
        let Some(last) = uids.last().copied() else {
            break;
        };
        // Cards dropped first, moving each generation: a drifted copy an
        // instance keeps (`service::read::near_cache`) is then outdated.
        let drops: Vec<Changes> = uids
            .iter()
            .map(|u| Changes {
                owner: Owner::User(*u),
                expected_gen: None,
                changes: vec![LiveChange::Drop(LiveKey::Blob(BlobKey::Card(*u)))],
            })
            .collect();
        live.apply(&drops).await?;
        let gens = generations(live, uids.iter().map(|u| Owner::User(*u)).collect()).await?;
        let users = docs.users_by_ids(&uids).await?;
        let mut fill = LiveFill::default();
        // An erased or suspended account has no card (reads take its
        // absence for the account being gone): its card was dropped above,
        // and none is made.
        let now = crate::ids::now_ms();
        for u in users.into_iter().filter(|u| !u.is_withheld(now)) {
            fill.blobs.push((
                BlobKey::Card(u.uid),
                json(&u.cached_card())?,
                gens.get(&Owner::User(u.uid)).copied(),
            ));
        }
        live.fill(&fill).await?;
        report.users += uids.len() as u64;
        progress(uids.len() as u64);
        after = Some(last);
    }
    Ok(report)
}

fn describe_set(key: SetKey) -> String {
    match key {
        SetKey::PostLikers(p) => format!("post {p}: likers"),
        SetKey::PostComments(p) => format!("post {p}: comments"),
        SetKey::CommentLikers(p, c) => format!("post {p}, comment {c}: likers"),
        SetKey::CommentReplies(p, c) => format!("post {p}, comment {c}: replies"),
        SetKey::Following(u) => format!("user {u}: following"),
        SetKey::Home(u) => format!("user {u}: home timeline"),
        SetKey::Friends(u) => format!("user {u}: friends"),
        SetKey::Blocking(u) => format!("user {u}: blocking"),
        SetKey::BlockedBy(u) => format!("user {u}: blocked by"),
        SetKey::Muted(u) => format!("user {u}: muted"),
        SetKey::HiddenBy(u) => format!("user {u}: hidden by"),
        SetKey::LabelMembers(u, l) => format!("user {u}, label {l}: members"),
        SetKey::PostShares(p) => format!("post {p}: shares"),
    }
}

/// Compares the live state with the documents; absent keys are counted,
/// differing ones reported. A write landing mid-check can show as a
/// mismatch that is gone on a second run.
pub async fn check_live(
    docs: &dyn DocStore,
    live: &dyn LiveStore,
    mut progress: impl FnMut(u64),
) -> StoreResult<CheckReport> {
    let mut report = CheckReport::default();
    let mut after = None;
    loop {
        let ids = docs.post_ids_after(after, BATCH).await?;
        let Some(last) = ids.last().copied() else {
            break;
        };
        let derived = derive(docs, &ids).await?;
        let read = LiveRead {
            blobs: derived
                .bodies
                .iter()
                .map(|b| BlobKey::PostBody(b.id))
                .collect(),
            sets: derived
                .sets
                .iter()
                .map(|(key, _)| SetRead {
                    key: *key,
                    top: ALL,
                    probe: None,
                    below: None,
                })
                .collect(),
            ..Default::default()
        };
        let answer = live.read(&read).await?;
        for (body, cached) in derived.bodies.iter().zip(answer.blobs) {
            match cached.map(|t| serde_json::from_str::<PostBody>(&t)) {
                None => report.absent += 1,
                Some(Ok(c)) if &c == body => {}
                Some(_) => report.mismatches.push(format!(
                    "post {}: cached body differs from the document",
                    body.id
                )),
            }
        }
        for ((key, members), view) in derived.sets.iter().zip(answer.sets) {
            let Some(view) = view else {
                report.absent += 1;
                continue;
            };
            let want: BTreeSet<(i64, i64)> = members.iter().copied().collect();
            let have: BTreeSet<(i64, i64)> = view.top.iter().copied().collect();
            if want != have || view.count != want.len() as u64 {
                let missing: Vec<i64> = want.difference(&have).map(|m| m.0).take(5).collect();
                let extra: Vec<i64> = have.difference(&want).map(|m| m.0).take(5).collect();
                report.mismatches.push(format!(
                    "{}: live count {} but documents {}; missing {missing:?}, extra {extra:?}",
                    describe_set(*key),
                    view.count,
                    want.len()
                ));
            }
        }
        report.posts += ids.len() as u64;
        progress(ids.len() as u64);
        after = Some(last);
    }
    let mut after = None;
    loop {
        let uids = docs.user_ids_after(after, BATCH).await?;
        let Some(last) = uids.last().copied() else {
            break;
        };
        let users = docs.users_by_ids(&uids).await?;
        let read = LiveRead {
            blobs: users.iter().map(|u| BlobKey::Card(u.uid)).collect(),
            ..Default::default()
        };
        let answer = live.read(&read).await?;
        for (user, cached) in users.iter().zip(answer.blobs) {
            if user.is_withheld(crate::ids::now_ms()) {
                if cached.is_some() {
                    report.mismatches.push(format!(
                        "user {}: erased or suspended, yet a card is cached",
                        user.uid
                    ));
                }
                continue;
            }
            match cached.map(|t| serde_json::from_str::<CachedCard>(&t)) {
                None => report.absent += 1,
                Some(Ok(c)) if c == user.cached_card() => {}
                Some(_) => report.mismatches.push(format!(
                    "user {}: cached card differs from the account",
                    user.uid
                )),
            }
        }
        report.users += uids.len() as u64;
        progress(uids.len() as u64);
        after = Some(last);
    }
    Ok(report)
}
