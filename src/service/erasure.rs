//! Erasing a deleted account's traces, so that every other user's reads
//! show none of it: its posts (tombstoned, so every read drops them), its
//! comments and likes (taken out of their posts' sets and counts), its
//! pictures, favorites, shares (taken out of their posts' counts), labels, mutes
//! and hides, its strikes, what it said in its reports, and the snapshots
//! of what was reported of it (once the case is closed), its data
//! exports and their archives, its posts' entries in the search index,
//! every follow and block it had (both
//! sides' sets rebuilt),
//! and every notification to or by it. Work goes in batches; a request does a
//! bounded share and the rest continues in the background. The account
//! stays marked until nothing is left, and the periodic sweep resumes
//! marked accounts, so an erasure cut short by a restart still finishes.

use super::{comments, posts, social, Context};
use crate::error::AppResult;
use crate::store::{LikeKind, LiveChange, Owner, PostBody, SetKey};

const BATCH: usize = 200;

/// Erases up to about `budget` of `uid`'s traces; true when none is left.
pub async fn erase_traces(ctx: &Context, uid: i64, budget: usize) -> AppResult<bool> {
    let mut spent = 0;
    macro_rules! spend {
        ($n:expr) => {
            spent += $n;
            if spent >= budget {
                return Ok(false);
            }
        };
    }
    // Its archives first: they hold everything else.
    super::exports::erase_of(ctx, uid).await?;
    ctx.docs.delete_imports_of(uid, 0).await?;
    loop {
        let ids = ctx.docs.post_ids_by_author(uid, None, BATCH).await?;
        if ids.is_empty() {
            break;
        }
        for doc in ctx.docs.posts_by_ids(&ids).await? {
            posts::remove_post(ctx, PostBody::from(doc)).await?;
        }
        spend!(ids.len());
    }
    // Whatever a pass of the indexer read of its posts while they went.
    ctx.search.forget_author(uid);
    // Its posts' pictures went with them; then the rest of its uploads.
    loop {
        let n = super::media::sweeps::erase_of(ctx, uid, BATCH).await?;
        if n == 0 {
            break;
        }
        spend!(n);
    }
    loop {
        let mine = ctx.docs.comments_by_author(uid, None, BATCH).await?;
        if mine.is_empty() {
            break;
        }
        for c in &mine {
            comments::remove_comment(ctx, c).await?;
        }
        spend!(mine.len());
    }
    loop {
        // Only its keeper ever reads them: nothing live to update.
        let n = ctx.docs.delete_favorites_of(uid, BATCH).await?;
        if n == 0 {
            break;
        }
        spend!(n as usize);
    }
    // What it said in its reports: who reported, and how, stay for their
    // cases (a moderator still weighs them); its words go.
    let mut before = None;
    loop {
        let page = ctx.docs.reports_by_reporter(uid, before, BATCH).await?;
        let said: Vec<&crate::store::ReportDoc> =
            page.iter().filter(|r| !r.comment.is_empty()).collect();
        for r in &said {
            ctx.docs.erase_report_comment(r).await?;
        }
        spend!(said.len());
        if page.len() < BATCH {
            break;
        }
        before = page.last().map(|r| r.id);
    }
    loop {
        // What moderators keep of it: the snapshots of its closed queue
        // items (an open one keeps its own until closed, then loses it),
        // and its strikes, which were its to see.
        let n = ctx.docs.erase_snapshots(Some(uid), i64::MAX, BATCH).await?
            + ctx.docs.delete_strikes_of(uid, BATCH).await?;
        if n == 0 {
            break;
        }
        spend!(n as usize);
    }
    loop {
        // Its history; the views stay counted on their posts, as a count
        // names nobody.
        let n = ctx.docs.delete_views_of(uid, BATCH).await?;
        if n == 0 {
            break;
        }
        spend!(n as usize);
    }
    loop {
        // Its shares, taken out of their posts' counts.
        let shares = ctx.docs.shares_by_user(uid, None, BATCH).await?;
        if shares.is_empty() {
            break;
        }
        for share in &shares {
            if ctx.docs.delete_share(share).await? {
                let set = SetKey::PostShares(share.post_id);
                ctx.repair
                    .apply_unordered(
                        ctx.live.as_ref(),
                        set.owner(),
                        vec![LiveChange::LwwRemove(set, share.id, share.id)],
                    )
                    .await;
            }
        }
        spend!(shares.len());
    }
    loop {
        // Its labels: the posts naming them are gone. Its mutes and hides,
        // and those set on it: a live set still naming it names nobody who
        // posts, and is rebuilt without it once dropped.
        let n = ctx.docs.delete_labels_of(uid, BATCH).await?
            + ctx.docs.delete_filters_involving(uid, BATCH).await?;
        if n == 0 {
            break;
        }
        spend!(n as usize);
    }
    loop {
        let likes = ctx.docs.likes_by_user(uid, None, BATCH).await?;
        if likes.is_empty() {
            break;
        }
        // A comment's likers are kept under its post.
        let liked_comments: Vec<i64> = likes
            .iter()
            .filter(|l| l.kind == LikeKind::Comment)
            .map(|l| l.target_id)
            .collect();
        let post_of: std::collections::HashMap<i64, i64> = ctx
            .docs
            .comments_by_id_alone(&liked_comments)
            .await?
            .into_iter()
            .map(|c| (c.id, c.post_id))
            .collect();
        for l in &likes {
            if ctx
                .docs
                .delete_like(l.kind, l.target_id, uid)
                .await?
                .is_none()
            {
                continue;
            }
            let set = match l.kind {
                LikeKind::Post => Some(SetKey::PostLikers(l.target_id)),
                LikeKind::Comment => post_of
                    .get(&l.target_id)
                    .map(|p| SetKey::CommentLikers(*p, l.target_id)),
            };
            if let Some(set) = set {
                ctx.repair
                    .apply_unordered(
                        ctx.live.as_ref(),
                        set.owner(),
                        vec![LiveChange::LwwRemove(set, uid, l.id)],
                    )
                    .await;
            }
        }
        spend!(likes.len());
    }
    loop {
        let mut others: Vec<i64> = ctx
            .docs
            .following_page(uid, None, BATCH)
            .await?
            .into_iter()
            .map(|e| e.followee)
            .collect();
        others.extend(
            ctx.docs
                .followers_page(uid, None, BATCH)
                .await?
                .into_iter()
                .map(|e| e.follower),
        );
        // A batch of its blocks either way: each is severed here, so the
        // next batch is the next ones.
        others.extend(
            ctx.docs
                .blocks_involving(uid, BATCH)
                .await?
                .into_iter()
                .map(|b| {
                    if b.blocker == uid {
                        b.blocked
                    } else {
                        b.blocker
                    }
                }),
        );
        others.sort_unstable();
        others.dedup();
        if others.is_empty() {
            break;
        }
        for other in &others {
            social::sever(ctx, uid, *other).await?;
        }
        spend!(others.len());
    }
    loop {
        let n = ctx.docs.delete_notifications_involving(uid, BATCH).await?;
        if n == 0 {
            break;
        }
        spend!(n as usize);
    }
    // Its own timeline and sets go too (derived, but nobody will read them).
    ctx.repair
        .apply_unordered(
            ctx.live.as_ref(),
            Owner::User(uid),
            vec![super::feed::page::forget_timeline(uid)],
        )
        .await;
    ctx.docs.erasure_done(uid).await?;
    Ok(true)
}

/// Finishes the erasures an instance left unfinished (it stopped while one
/// ran in the background): part of the periodic sweep, on every instance.
/// Erasing twice at once is harmless: every step is a delete.
pub async fn resume_unfinished(ctx: &Context) -> AppResult<usize> {
    let waiting = ctx.docs.accounts_being_erased(16).await?;
    for uid in &waiting {
        erase_traces(ctx, *uid, 10_000).await?;
    }
    Ok(waiting.len())
}

/// Erases the rest in the background, retrying after store failures.
pub fn finish_in_background(ctx: &Context, uid: i64) {
    let ctx = ctx.clone();
    tokio::spawn(async move {
        loop {
            match erase_traces(&ctx, uid, 10_000).await {
                Ok(true) => return,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(uid, error = %e, "erasing a deleted account paused");
                    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
                }
            }
        }
    });
}
