//! Importing lists of people: whom to follow, block, mute or hide from,
//! from this service's own CSV (what an export writes) or Mastodon's.
//! A preview says what the import would add and remove and names each row
//! it cannot use; the import applies exactly that plan (the same plan id,
//! or 409), in the background (`job`), within every cap, and a retry of
//! the same import finds the one already made. Each step is what the
//! account would do by hand (`service::social`), so timelines,
//! notifications and blocks behave as they do for a follow made by hand.

pub mod job;

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::domain::people_csv::{self, RowProblem};
use crate::error::{AppError, AppResult};
use crate::ids::now_ms;
use crate::service::read::responses::Page;
use crate::service::{rate_limits, social, Context};
use crate::store::{FilterKind, ImportDoc, ImportKind, ImportMode, ImportState, UserDoc};

pub use job::Imports;

/// Imports an account keeps (the newest).
pub const KEPT_PER_ACCOUNT: usize = 20;

/// The longest `planId` a request may carry (the schema's bound).
const PLAN_ID_MAX: usize = 64;

/// Usernames looked up per store read.
const LOOKUP_BATCH: usize = 1000;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportRequest {
    pub kind: ImportKind,
    pub mode: ImportMode,
    /// The list: this service's CSV (`Account address,uid,since`) or
    /// Mastodon's (a header with `Account address`, or none and one
    /// `user@host` a line). At most 10,000 rows, 1 MiB.
    #[schema(max_length = 1048576)]
    pub csv: String,
    /// The `planId` of the preview this import applies: when the plan is
    /// another now (the list or the account changed), 409 and nothing is
    /// done. Without it, whatever the plan is now is applied.
    #[serde(default)]
    #[schema(max_length = 64)] // PLAN_ID_MAX
    pub plan_id: Option<String>,
}

/// Someone an import names.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Named {
    pub uid: i64,
    pub username: String,
}

/// A row an import cannot use, and why.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RejectedRow {
    /// Its line in the CSV, from 1.
    pub line: usize,
    pub value: String,
    pub problem: RowProblem,
    /// The problem in an English sentence.
    pub reason: String,
}

/// What an import would do.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportPreview {
    pub kind: ImportKind,
    pub mode: ImportMode,
    /// Names this plan: `POST /me/imports` with it applies this plan or
    /// nothing.
    pub plan_id: String,
    /// Who would be added, in the list's order.
    pub add: Vec<Named>,
    /// Who would be removed (overwrite only): on the list now, not in the CSV.
    pub remove: Vec<Named>,
    /// Rows naming someone on the list already.
    pub unchanged: usize,
    pub rejected: Vec<RejectedRow>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportView {
    pub id: i64,
    pub kind: ImportKind,
    pub mode: ImportMode,
    pub plan_id: String,
    pub state: ImportState,
    pub progress: ImportProgress,
    /// Steps that could no longer be done when their turn came (someone
    /// blocked the account since the preview, or left).
    pub skipped: i64,
    pub created_at: i64,
    pub finished_at: Option<i64>,
    pub error: Option<String>,
}

/// Steps done of the steps planned: the removes, then the adds.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ImportProgress {
    pub done: i64,
    pub total: i64,
}

impl From<ImportDoc> for ImportView {
    fn from(i: ImportDoc) -> Self {
        ImportView {
            id: i.id,
            kind: i.kind,
            mode: i.mode,
            plan_id: i.plan_id,
            state: i.state,
            progress: ImportProgress {
                done: i.done,
                total: (i.add.len() + i.remove.len()) as i64,
            },
            skipped: i.skipped,
            created_at: i.created_at,
            finished_at: i.finished_at,
            error: i.error,
        }
    }
}

/// The most an account's list of this kind may hold.
fn cap(ctx: &Context, kind: ImportKind) -> usize {
    let setting = match kind {
        ImportKind::Following => ctx.settings.max_following,
        ImportKind::Blocks => ctx.settings.max_blocks,
        ImportKind::Mutes | ImportKind::Hidden => social::MAX_FILTERS as u64,
    };
    usize::try_from(setting).unwrap_or(usize::MAX)
}

/// Who is on the account's list of this kind now. Every list is capped, so
/// it is read whole.
async fn current(ctx: &Context, uid: i64, kind: ImportKind) -> AppResult<Vec<i64>> {
    Ok(match kind {
        ImportKind::Following => {
            let mut all = Vec::new();
            let mut before = None;
            loop {
                let page = ctx.docs.following_page(uid, before, 1000).await?;
                all.extend(page.iter().map(|f| f.followee));
                if page.len() < 1000 {
                    break all;
                }
                before = page.last().map(|f| f.id);
            }
        }
        ImportKind::Blocks => ctx
            .docs
            .blocks_by(&[uid])
            .await?
            .into_iter()
            .map(|b| b.blocked)
            .collect(),
        ImportKind::Mutes | ImportKind::Hidden => {
            let filter = if kind == ImportKind::Mutes {
                FilterKind::Mute
            } else {
                FilterKind::Hide
            };
            ctx.docs
                .filters_set_by(filter, &[uid])
                .await?
                .into_iter()
                .map(|f| f.other)
                .collect()
        }
    })
}

/// The plan of an import, as its preview shows it and its apply does it.
pub async fn plan(
    ctx: &Context,
    uid: i64,
    req: &ImportRequest,
    host: &str,
) -> AppResult<ImportPreview> {
    if req.csv.len() > people_csv::MAX_BYTES {
        return Err(AppError::PayloadTooLarge {
            limit: people_csv::MAX_BYTES,
        });
    }
    // A plan id is ours (32 hex digits): anything longer names no plan, and
    // the preview refuses it as the import would, rather than echo it.
    if req.plan_id.as_ref().is_some_and(|p| p.len() > PLAN_ID_MAX) {
        return Err(AppError::invalid("planId", "not a plan id"));
    }
    let rows = people_csv::read(&req.csv, host)?;
    rate_limits::enforce(
        ctx,
        &rate_limits::import_row_budgets(ctx.settings.rate_limits.as_ref(), uid, rows.len()),
    )
    .await?;
    let now = now_ms();
    let mut wanted: Vec<String> = rows
        .iter()
        .filter_map(|r| r.username.as_ref().ok())
        .map(|u| u.as_str().to_string())
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut by_name: HashMap<String, UserDoc> = HashMap::new();
    for part in wanted.chunks(LOOKUP_BATCH) {
        for u in ctx.docs.users_by_usernames(part).await? {
            if !u.is_withheld(now) {
                by_name.insert(u.username.clone(), u);
            }
        }
    }
    let on_list: HashSet<i64> = current(ctx, uid, req.kind).await?.into_iter().collect();
    let named: Vec<i64> = by_name.values().map(|u| u.uid).collect();
    // Who may not be on this list: anyone across a block (but for a block
    // list), and for hides anyone who does not follow the account.
    let mut across_block: HashSet<i64> = HashSet::new();
    // Who blocked the account is theirs to know: to it they are no one
    // here, as their profile is, unless it has them on the list already.
    let mut blocking_me: HashSet<i64> = HashSet::new();
    let mut followers: HashSet<i64> = HashSet::new();
    for part in named.chunks(LOOKUP_BATCH) {
        // A block list too: blocking someone who blocked you answers as
        // for no such account (`social::block`), so its preview must.
        blocking_me.extend(ctx.docs.blockers_among(uid, part).await?);
        if req.kind != ImportKind::Blocks {
            across_block.extend(ctx.docs.blocks_between(uid, part).await?);
        }
        if req.kind == ImportKind::Hidden {
            followers.extend(ctx.docs.follow_edges(uid, part).await?.1);
        }
    }

    let mut rejected = Vec::new();
    let mut first_line: HashMap<i64, usize> = HashMap::new();
    let mut listed: HashSet<i64> = HashSet::new();
    let mut new: Vec<(&people_csv::Row, Named)> = Vec::new();
    let mut unchanged = 0;
    let cap = cap(ctx, req.kind);
    for row in &rows {
        let mut reject = |problem, reason: String| {
            rejected.push(RejectedRow {
                line: row.line,
                value: row.value.clone(),
                problem,
                reason,
            })
        };
        let name = match &row.username {
            Ok(name) => name,
            Err(problem @ RowProblem::OtherService) => {
                let their = row.value.rsplit_once('@').map_or("", |(_, h)| h);
                reject(*problem, format!("an account of another service ({their})"));
                continue;
            }
            Err(problem) => {
                reject(*problem, "not a username".into());
                continue;
            }
        };
        let Some(user) = by_name
            .get(name.as_str())
            .filter(|u| !blocking_me.contains(&u.uid) || on_list.contains(&u.uid))
        else {
            reject(RowProblem::NoSuchUser, "no such user here".into());
            continue;
        };
        if user.uid == uid {
            reject(RowProblem::Yourself, "yourself".into());
            continue;
        }
        if let Some(line) = first_line.get(&user.uid) {
            reject(
                RowProblem::ListedTwice,
                format!("listed already, on line {line}"),
            );
            continue;
        }
        first_line.insert(user.uid, row.line);
        // On the list already: it stays, whatever would keep it off now (a
        // block made since, a follower gone), or an overwrite would take
        // off someone the list names.
        if on_list.contains(&user.uid) {
            listed.insert(user.uid);
            unchanged += 1;
            continue;
        }
        if across_block.contains(&user.uid) {
            reject(
                RowProblem::BlockBetween,
                "a block stands between you".into(),
            );
            continue;
        }
        if req.kind == ImportKind::Hidden && !followers.contains(&user.uid) {
            reject(
                RowProblem::NotAFollower,
                "does not follow you: only a follower can be hidden from".into(),
            );
            continue;
        }
        listed.insert(user.uid);
        new.push((
            row,
            Named {
                uid: user.uid,
                username: user.username.clone(),
            },
        ));
    }
    let remove_uids: Vec<i64> = match req.mode {
        ImportMode::Merge => Vec::new(),
        ImportMode::Overwrite => {
            let mut r: Vec<i64> = on_list.difference(&listed).copied().collect();
            r.sort_unstable();
            r
        }
    };
    // Within the cap: what stays, then the new ones in the list's order.
    let staying = on_list.len() - remove_uids.len();
    let room = cap.saturating_sub(staying);
    let mut add = Vec::new();
    for (row, who) in new {
        if add.len() < room {
            add.push(who);
        } else {
            rejected.push(RejectedRow {
                line: row.line,
                value: row.value.clone(),
                problem: RowProblem::OverCap,
                reason: format!("over the cap of {cap} on this list"),
            });
        }
    }
    rejected.sort_by_key(|r| r.line);
    let names = crate::service::accounts::usernames_of(ctx, &remove_uids).await?;
    let remove: Vec<Named> = remove_uids
        .iter()
        .map(|u| Named {
            uid: *u,
            username: names.get(u).cloned().unwrap_or_default(),
        })
        .collect();
    let newest_import = ctx.docs.imports_of(uid, 1).await?.first().map(|i| i.id);
    let plan_id = plan_id(uid, newest_import, req.kind, req.mode, &add, &remove);
    Ok(ImportPreview {
        kind: req.kind,
        mode: req.mode,
        plan_id,
        add,
        remove,
        unchanged,
        rejected,
    })
}

/// What names a plan: the account, the kind and mode, whom it adds and
/// removes, in order, and the account's newest import when it was made. So
/// a plan is applied once: the same list previewed again after an import
/// (whose follows were undone by hand since, say) is a new plan, not a
/// retry of the import that applied it.
fn plan_id(
    uid: i64,
    newest_import: Option<i64>,
    kind: ImportKind,
    mode: ImportMode,
    add: &[Named],
    remove: &[Named],
) -> String {
    let mut h = Sha256::new();
    h.update(format!("{uid}|{newest_import:?}|{kind:?}|{mode:?}|add").as_bytes());
    for a in add {
        h.update(format!(",{}", a.uid).as_bytes());
    }
    h.update(b"|remove");
    for r in remove {
        h.update(format!(",{}", r.uid).as_bytes());
    }
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Starts applying the plan; `(import, true)` when this call made it,
/// `(import, false)` when it is a retry of one already made.
pub async fn start(
    ctx: &Context,
    uid: i64,
    req: &ImportRequest,
    host: &str,
) -> AppResult<(ImportView, bool)> {
    // A retry of an import made already finds it, though its plan (what
    // is left to do) is another now.
    if let Some(previewed) = req.plan_id.as_deref() {
        let mine = ctx.docs.imports_of(uid, KEPT_PER_ACCOUNT).await?;
        if let Some(made) = mine.into_iter().find(|i| {
            i.plan_id == previewed
                && (i.kind, i.mode) == (req.kind, req.mode)
                && i.state != ImportState::Failed
        }) {
            return Ok((made.into(), false));
        }
    }
    let plan = plan(ctx, uid, req, host).await?;
    if req.plan_id.as_deref().is_some_and(|p| p != plan.plan_id) {
        return Err(AppError::Conflict(
            "what this import would do changed since its preview; preview it again".into(),
        ));
    }
    for _ in 0..3 {
        let mine = ctx.docs.imports_of(uid, KEPT_PER_ACCOUNT).await?;
        if let Some(same) = mine
            .iter()
            .find(|i| i.plan_id == plan.plan_id && i.state != ImportState::Failed)
        {
            return Ok((same.clone().into(), false));
        }
        if let Some(running) = mine
            .iter()
            .find(|i| matches!(i.state, ImportState::Queued | ImportState::Running))
        {
            return Err(AppError::Conflict(format!(
                "import {} of this account is still running; one runs at a time",
                running.id
            )));
        }
        ctx.docs
            .delete_imports_of(uid, KEPT_PER_ACCOUNT - 1)
            .await?;
        let newest_seen = ctx.docs.imports_of(uid, 1).await?.first().map(|i| i.id);
        let import = ImportDoc {
            id: crate::ids::next_id(),
            uid,
            kind: plan.kind,
            mode: plan.mode,
            plan_id: plan.plan_id.clone(),
            add: plan.add.iter().map(|a| a.uid).collect(),
            remove: plan.remove.iter().map(|r| r.uid).collect(),
            state: ImportState::Queued,
            done: 0,
            skipped: 0,
            created_at: now_ms(),
            finished_at: None,
            error: None,
            attempt: 0,
            claimed_until: 0,
        };
        if ctx.docs.insert_import(&import, newest_seen).await? {
            ctx.imports.wake();
            tracing::info!(
                import = import.id,
                uid,
                steps = import.add.len() + import.remove.len(),
                "import queued"
            );
            return Ok((import.into(), true));
        }
    }
    Err(AppError::Conflict(
        "another import of this account was started at the same moment".into(),
    ))
}

pub async fn list(ctx: &Context, uid: i64) -> AppResult<Page<ImportView>> {
    Ok(Page {
        items: ctx
            .docs
            .imports_of(uid, KEPT_PER_ACCOUNT)
            .await?
            .into_iter()
            .map(ImportView::from)
            .collect(),
        next_cursor: None,
        server_time: now_ms(),
    })
}

pub async fn get(ctx: &Context, uid: i64, id: i64) -> AppResult<ImportView> {
    ctx.docs
        .import_by_id(uid, id)
        .await?
        .map(ImportView::from)
        .ok_or(AppError::NotFound("import"))
}
