//! Data exports (GDPR Article 20): one archive of everything an account
//! made, asked for with `POST /me/exports`, written in the background by
//! whichever instance claims it (`job`), file by file (`archive`), and
//! downloaded from any instance, by byte range, until it expires.
//!
//! At most one export runs per account, and a new one may be asked for
//! `MOMENTS_EXPORT_INTERVAL_SECS` after the last that did not fail. An
//! account keeps at most `KEPT_PER_ACCOUNT` exports: with the interval and
//! `MOMENTS_EXPORT_KEEP_SECS` that bounds what it stores to that many
//! archives of at most `MOMENTS_EXPORT_MAX_BYTES` each.

pub mod archive;
pub mod download;
pub mod job;
pub mod run;
pub mod sink;

use serde::Serialize;

use crate::error::{AppError, AppResult};
use crate::ids::now_ms;
use crate::service::read::responses::Page;
use crate::service::Context;
use crate::store::{ExportDoc, ExportState};

pub use job::Exports;

/// Exports an account keeps (the newest; older ones are deleted when a
/// new one starts).
pub const KEPT_PER_ACCOUNT: usize = 10;

/// Failed exports an account may follow with another within the interval.
pub const FAILED_PER_INTERVAL: usize = 3;

/// How long a download link opens its archive.
pub const LINK_MS: i64 = 60 * 60 * 1000;

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportView {
    pub id: i64,
    pub state: ExportState,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// When a ready archive (or a failed export) is deleted.
    pub expires_at: Option<i64>,
    pub progress: ExportProgress,
    /// The archive's bytes, once ready.
    pub size: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
    /// Where a ready archive is downloaded (with the caller's token, or a
    /// link from `POST /me/exports/{id}/link`).
    pub download: Option<String>,
}

/// Records written of the records found so far: `known` grows while the
/// export runs, as it reaches each kind of record.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ExportProgress {
    pub done: i64,
    pub known: i64,
}

impl From<ExportDoc> for ExportView {
    fn from(e: ExportDoc) -> Self {
        let ready = e.state == ExportState::Ready;
        ExportView {
            id: e.id,
            state: e.state,
            created_at: e.created_at,
            started_at: e.started_at,
            finished_at: e.finished_at,
            expires_at: e.expires_at,
            progress: ExportProgress {
                done: e.done,
                known: e.known.max(e.done),
            },
            size: e.size,
            error: e.error,
            download: ready.then(|| format!("/api/v1/me/exports/{}/download", e.id)),
        }
    }
}

/// A link that downloads one ready archive without a token, for a
/// browser's own download (which resumes with `Range`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DownloadLink {
    pub url: String,
    pub expires_at: i64,
}

/// A ready archive, as a download reads it.
#[derive(Debug, Clone)]
pub struct ReadyArchive {
    pub id: i64,
    pub uid: i64,
    pub attempt: i64,
    pub size: u64,
    pub sha256: String,
    pub chunk_bytes: u64,
    pub created_at: i64,
}

fn unfinished(e: &ExportDoc) -> bool {
    matches!(e.state, ExportState::Queued | ExportState::Running)
}

/// Starts an export of `uid`'s data: 409 while one runs, 429 (with when)
/// within the interval of the last one that did not fail.
pub async fn start(ctx: &Context, uid: i64) -> AppResult<ExportView> {
    for _ in 0..3 {
        let mine = ctx.docs.exports_of(uid, KEPT_PER_ACCOUNT + 1).await?;
        if let Some(running) = mine.iter().find(|e| unfinished(e)) {
            return Err(AppError::Conflict(format!(
                "export {} of this account is still {}; one runs at a time",
                running.id,
                if running.state == ExportState::Queued {
                    "queued"
                } else {
                    "running"
                }
            )));
        }
        let now = now_ms();
        let interval_ms = ctx.settings.exports.interval_secs as i64 * 1000;
        if let Some(last) = mine.iter().find(|e| e.state != ExportState::Failed) {
            let next = last.created_at + interval_ms;
            if interval_ms > 0 && next > now {
                return Err(AppError::RateLimited {
                    what: "data exports",
                    retry_after_secs: ((next - now) as u64).div_ceil(1000),
                });
            }
        }
        // A failure frees the account, but not without end: each failed
        // run wrote up to an archive's worth and threw it away.
        let failed: Vec<&ExportDoc> = mine
            .iter()
            .filter(|e| e.state == ExportState::Failed && e.created_at + interval_ms > now)
            .collect();
        if interval_ms > 0 && failed.len() >= FAILED_PER_INTERVAL {
            let next = failed
                .iter()
                .map(|e| e.created_at + interval_ms)
                .min()
                .unwrap_or(now);
            return Err(AppError::RateLimited {
                what: "failed data exports",
                retry_after_secs: ((next - now).max(1) as u64).div_ceil(1000),
            });
        }
        // Room for the new one: the oldest beyond the bound go.
        for old in mine.iter().skip(KEPT_PER_ACCOUNT - 1) {
            ctx.docs.delete_export(uid, old.id).await?;
            ctx.exports.downloads.forget(old.id);
        }
        let newest_seen = mine.first().map(|e| e.id);
        let export = ExportDoc {
            id: crate::ids::next_id(),
            uid,
            state: ExportState::Queued,
            created_at: now,
            started_at: None,
            finished_at: None,
            expires_at: None,
            done: 0,
            known: 0,
            size: None,
            sha256: None,
            error: None,
            attempt: 0,
            claimed_until: 0,
            chunk_bytes: ctx.settings.exports.chunk_bytes as i64,
            link_hash: None,
            link_expires_at: 0,
            link_gen: 0,
        };
        match ctx.docs.insert_export(&export, newest_seen).await? {
            true => {
                ctx.exports.wake();
                tracing::info!(export = export.id, uid, "data export queued");
                return Ok(export.into());
            }
            // Another start won the race: what it started decides.
            false => continue,
        }
    }
    Err(AppError::Conflict(
        "another export of this account was started at the same moment".into(),
    ))
}

pub async fn list(ctx: &Context, uid: i64) -> AppResult<Page<ExportView>> {
    let mine = ctx.docs.exports_of(uid, KEPT_PER_ACCOUNT).await?;
    Ok(Page {
        items: mine.into_iter().map(ExportView::from).collect(),
        next_cursor: None,
        server_time: now_ms(),
    })
}

pub async fn get(ctx: &Context, uid: i64, id: i64) -> AppResult<ExportView> {
    ctx.docs
        .export_by_id(uid, id)
        .await?
        .map(ExportView::from)
        .ok_or(AppError::NotFound("export"))
}

fn ready(e: ExportDoc, now: i64) -> AppResult<ReadyArchive> {
    if e.expires_at.is_some_and(|t| t <= now) {
        return Err(AppError::NotFound("export"));
    }
    match (e.state, e.size, e.sha256) {
        (ExportState::Ready, Some(size), Some(sha256)) => Ok(ReadyArchive {
            id: e.id,
            uid: e.uid,
            attempt: e.attempt,
            size: size.max(0) as u64,
            sha256,
            chunk_bytes: e.chunk_bytes.max(1) as u64,
            created_at: e.created_at,
        }),
        (ExportState::Failed, ..) => Err(AppError::Conflict(
            "this export failed; it has no archive".into(),
        )),
        _ => Err(AppError::Conflict(
            "this export is not ready yet; its state says how far it is".into(),
        )),
    }
}

/// The owner's ready archive.
pub async fn archive_of(ctx: &Context, uid: i64, id: i64) -> AppResult<ReadyArchive> {
    let e = ctx
        .docs
        .export_by_id(uid, id)
        .await?
        .ok_or(AppError::NotFound("export"))?;
    ready(e, now_ms())
}

/// The archive a download link opens: its key names the account, and its
/// hash must be the export's current link's, unexpired.
pub async fn archive_by_link(ctx: &Context, id: i64, key: &str) -> AppResult<ReadyArchive> {
    const REFUSED: AppError = AppError::Unauthorized("unknown or expired download link");
    let (uid, secret) = key.split_once('-').ok_or(REFUSED)?;
    let uid: i64 = uid.parse().map_err(|_| REFUSED)?;
    if secret.len() != 48 || !secret.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(REFUSED);
    }
    let owner = [uid];
    let (found, user) = tokio::try_join!(
        ctx.docs.export_by_id(uid, id),
        ctx.docs.users_by_ids(&owner)
    )?;
    let e = found.ok_or(REFUSED)?;
    let now = now_ms();
    let hash = crate::service::credentials::token_hash(key).hex();
    if e.link_hash.as_deref() != Some(hash.as_str()) || e.link_expires_at <= now {
        return Err(REFUSED);
    }
    // What ends the account's sessions ends its links: a new password,
    // signing out everywhere, a suspension.
    match user.first() {
        Some(u) if !u.is_withheld(now) && u.credential_gen == e.link_gen => {}
        _ => return Err(REFUSED),
    }
    ready(e, now)
}

/// A fresh download link for a ready archive, replacing the last one.
pub async fn link(ctx: &Context, uid: i64, id: i64) -> AppResult<DownloadLink> {
    archive_of(ctx, uid, id).await?;
    let credential_gen = ctx
        .docs
        .users_by_ids(&[uid])
        .await?
        .first()
        .map_or(0, |u| u.credential_gen);
    let mut raw = [0u8; 24];
    getrandom::getrandom(&mut raw).map_err(|e| AppError::Internal(anyhow::anyhow!("{e}")))?;
    let secret: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let key = format!("{uid}-{secret}");
    let expires_at = now_ms() + LINK_MS;
    let hash = crate::service::credentials::token_hash(&key).hex();
    if !ctx
        .docs
        .set_export_link(uid, id, &hash, expires_at, credential_gen)
        .await?
    {
        return Err(AppError::NotFound("export"));
    }
    Ok(DownloadLink {
        url: format!("/api/v1/me/exports/{id}/download?key={key}"),
        expires_at,
    })
}

/// Bytes `start..end` of the archive, a chunk at a time as the client
/// takes them (`download::chunk`: kept a little while, so a range that
/// needs one byte of a chunk costs a store read only the first time). The
/// download's `slot` is held until the stream ends or is dropped.
pub fn read_range(
    ctx: &Context,
    archive: ReadyArchive,
    start: u64,
    end: u64,
    slot: download::Slot,
) -> impl futures_util::Stream<Item = Result<actix_web::web::Bytes, AppError>> {
    let ctx = ctx.clone();
    let slot = std::sync::Arc::new(slot);
    futures_util::stream::try_unfold(start, move |at| {
        let ctx = ctx.clone();
        let archive = archive.clone();
        let _slot = slot.clone();
        async move {
            if at >= end {
                return Ok(None);
            }
            let n = at / archive.chunk_bytes;
            let chunk = download::chunk(&ctx, &archive, n).await?;
            let offset = (at - n * archive.chunk_bytes) as usize;
            let take = ((end - at) as usize).min(chunk.len().saturating_sub(offset));
            if take == 0 {
                return Err(AppError::Internal(anyhow::anyhow!(
                    "export {} chunk {n} is shorter than its archive says",
                    archive.id
                )));
            }
            Ok(Some((chunk.slice(offset..offset + take), at + take as u64)))
        }
    })
}

/// Deletes every export of an erased account, archives and all.
pub async fn erase_of(ctx: &Context, uid: i64) -> AppResult<usize> {
    let mut deleted = 0;
    loop {
        let mine = ctx.docs.exports_of(uid, KEPT_PER_ACCOUNT).await?;
        if mine.is_empty() {
            return Ok(deleted);
        }
        for e in &mine {
            ctx.docs.delete_export(uid, e.id).await?;
            ctx.exports.downloads.forget(e.id);
        }
        deleted += mine.len();
    }
}

/// Deletes the exports past their `expiresAt`: part of the periodic sweep.
pub async fn delete_expired(ctx: &Context) -> AppResult<usize> {
    let mut deleted = 0;
    for _ in 0..10 {
        let expired = ctx.docs.expired_exports(now_ms(), 100).await?;
        for (uid, id) in &expired {
            ctx.docs.delete_export(*uid, *id).await?;
            ctx.exports.downloads.forget(*id);
        }
        deleted += expired.len();
        if expired.len() < 100 {
            break;
        }
    }
    Ok(deleted)
}
