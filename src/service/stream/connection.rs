//! One open stream: a task that turns its account's log, the bus's news
//! of the posts it watches and the clock into SSE frames, into a bounded
//! buffer the HTTP response drains.
//!
//! Every account event comes from the log, read after the last id this
//! stream got to, whether the bus announced it or the client resumes: so
//! events arrive in log order, each once, whichever instance wrote them,
//! and a resume is the same read as a live event. A client that stops
//! reading fills the buffer; one that leaves it full for a heartbeat is
//! disconnected, to resume from its last id when it reads again.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::mpsc;

use super::delivery;
use super::events::names;
use super::{Closing, Resume, Wake, MAX_WATCHED};
use crate::error::AppResult;
use crate::service::accounts::Authed;
use crate::service::read::visibility::Place;
use crate::service::Context;
use crate::store::{EventId, LogRead, LoggedEvent, LOG_OPENED};

/// Log entries read per round trip while catching up.
const LOG_PAGE: usize = 100;

/// How a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The client went away, or its session ended.
    Left,
    /// Closed by the server, with a last frame (`reset` or `retry:`).
    Closed,
    /// Its client left the buffer full for a heartbeat.
    Slow,
}

pub struct Connection {
    pub(super) ctx: Context,
    pub(super) id: i64,
    pub(super) who: Authed,
    pub(super) expires_at: i64,
    /// The newest log entry this stream has dealt with (sent, or found not
    /// for this viewer).
    pub(super) last: EventId,
    pub(super) frames: mpsc::Sender<Vec<u8>>,
    pub(super) wakes: mpsc::Receiver<Wake>,
    pub(super) missed: Arc<AtomicBool>,
    /// The watched posts the viewer may see.
    pub(super) watched: Vec<i64>,
    /// Turns true when the instance stops.
    pub(super) stopping: tokio::sync::watch::Receiver<bool>,
    pub(super) unread: UnreadWindow,
}

/// When this stream last told the unread count, and whether it moved again
/// since (`UNREAD_WINDOW`).
#[derive(Default)]
pub struct UnreadWindow {
    told_at: Option<tokio::time::Instant>,
    moved_since: bool,
}

impl UnreadWindow {
    /// When a count that moved within the window is due.
    fn due(&self) -> Option<tokio::time::Instant> {
        self.told_at
            .filter(|_| self.moved_since)
            .map(|at| at + super::UNREAD_WINDOW)
    }
}

/// `ready`'s data: the stream's id, for `PUT /stream/{id}/watch`.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Ready {
    pub stream_id: i64,
    /// Whether the `Last-Event-ID` given was resumed from (every event
    /// after it follows). False without one, or when a `reset` follows.
    pub resumed: bool,
    pub heartbeat_secs: u64,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostNew {
    pub post_id: i64,
    pub author_uid: i64,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PostDeleted {
    pub post_id: i64,
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommentNew {
    pub post_id: i64,
    pub comment_id: i64,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct UnreadCount {
    pub unread: u64,
}

/// Why a stream sends `reset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResetReason {
    /// The id given is no longer in the log (or the log was lost): what
    /// came after it cannot be told; refetch what the client shows.
    Gone,
    /// The account opened one stream too many and this, its oldest, is
    /// closed: do not reconnect it.
    Replaced,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Reset {
    pub reason: ResetReason,
}

/// One SSE frame.
fn frame(id: EventId, event: &str, data: &impl Serialize) -> Vec<u8> {
    let data = serde_json::to_string(data).unwrap_or_else(|_| "{}".into());
    format!("id: {id}\nevent: {event}\ndata: {data}\n\n").into_bytes()
}

impl Connection {
    pub async fn run(mut self, resume: Option<Resume>, watch: Vec<i64>) -> End {
        match self.serve(resume, watch).await {
            Ok(()) => End::Left,
            Err(end) => end,
        }
    }

    fn settings(&self) -> &crate::config::StreamSettings {
        &self.ctx.settings.stream
    }

    /// Puts a frame in the buffer, waiting a heartbeat at most for room.
    async fn send(&self, bytes: Vec<u8>) -> Result<(), End> {
        let wait = Duration::from_secs(self.settings().heartbeat_secs);
        match tokio::time::timeout(wait, self.frames.send(bytes)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(End::Left),
            Err(_) => Err(End::Slow),
        }
    }

    async fn event(
        &self,
        id: EventId,
        name: &'static str,
        data: &impl Serialize,
    ) -> Result<(), End> {
        self.send(frame(id, name, data)).await?;
        crate::metrics::stream_event_sent(name);
        Ok(())
    }

    async fn serve(&mut self, resume: Option<Resume>, watch: Vec<i64>) -> Result<(), End> {
        let retry = format!("retry: {}\n\n", self.settings().retry_ms).into_bytes();
        self.send(retry).await?;
        // The head of the log: where a stream without a resume starts, and
        // so the id a client without any event yet resumes from.
        let head = self.last;
        let resumed = match resume {
            Some(Resume::Unplaceable) => false,
            Some(Resume::After(after)) => {
                self.last = after;
                match self.catch_up().await {
                    Ok(true) => true,
                    Ok(false) => false,
                    Err(Some(end)) => return Err(end),
                    // The store failed: what came after cannot be told.
                    Err(None) => false,
                }
            }
            None => true,
        };
        if resume.is_some() && resumed {
            crate::metrics::stream_resumed();
        }
        // `ready` follows the resumed events (they are the older), so its
        // id is where the stream got to.
        let ready = Ready {
            stream_id: self.id,
            resumed: resume.is_some() && resumed,
            heartbeat_secs: self.settings().heartbeat_secs,
        };
        if !resumed {
            self.reset(ResetReason::Gone, head).await?;
        }
        self.event(self.last, names::READY, &ready).await?;
        self.set_watch(watch).await?;

        let heartbeat = Duration::from_secs(self.settings().heartbeat_secs);
        let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
        let lifetime = Duration::from_secs(self.settings().max_secs);
        let ends_at = tokio::time::Instant::now() + lifetime;
        let session_ends = tokio::time::Instant::now()
            + Duration::from_millis((self.expires_at - crate::ids::now_ms()).max(0) as u64);
        let mut stopping = self.stopping.clone();
        loop {
            let unread_due = self.unread.due();
            tokio::select! {
                _ = tokio::time::sleep_until(unread_due.unwrap_or(ends_at)), if unread_due.is_some() => {
                    // The log first: a notification already logged is told
                    // before the count that includes it (and may tell the
                    // count itself, ending the window).
                    self.handle(vec![Wake::Log]).await?;
                    if self.unread.due().is_some() {
                        let last = self.last;
                        self.tell_unread(last).await?;
                    }
                }
                wake = self.wakes.recv() => {
                    let Some(wake) = wake else { return Ok(()) };
                    let mut batch = vec![wake];
                    while batch.len() < super::WAKES {
                        match self.wakes.try_recv() {
                            Ok(w) => batch.push(w),
                            Err(_) => break,
                        }
                    }
                    self.handle(batch).await?;
                }
                _ = beat.tick() => self.send(b": heartbeat\n\n".to_vec()).await?,
                _ = self.frames.closed() => return Ok(()),
                _ = stopped(&mut stopping) => return self.close(Closing::Stopping).await,
                _ = tokio::time::sleep_until(ends_at) => return self.close(Closing::Stopping).await,
                _ = tokio::time::sleep_until(session_ends) => return Err(End::Left),
            }
        }
    }

    async fn handle(&mut self, batch: Vec<Wake>) -> Result<(), End> {
        let resync = self.missed.swap(false, Ordering::SeqCst)
            || batch.iter().any(|w| matches!(w, Wake::Resync));
        let mut read_log = resync;
        let mut log_gone = false;
        let mut counts: Vec<i64> = Vec::new();
        let mut watch: Option<Vec<i64>> = None;
        for wake in &batch {
            match wake {
                Wake::Log | Wake::Resync => read_log = true,
                Wake::LogMayBeGone => {
                    read_log = true;
                    log_gone = true;
                }
                // A comment's count comes as a `Counts` of its own, through
                // the hub's window.
                Wake::Counts(p) => {
                    if !counts.contains(p) {
                        counts.push(*p);
                    }
                }
                Wake::Watch(posts) => watch = Some(posts.clone()),
                Wake::Close(how) => return self.close(*how).await,
                Wake::CheckSession => {
                    let still =
                        crate::service::accounts::honoured_until(&self.ctx, &self.who).await;
                    if matches!(still, Ok(None)) {
                        return Err(End::Left);
                    }
                }
                Wake::Gone(_) | Wake::Comment(..) => {}
            }
        }
        if read_log || log_gone {
            match self.catch_up().await {
                Ok(true) => {}
                Ok(false) | Err(None) => {
                    let head = self
                        .ctx
                        .live
                        .open_event_log(self.who.uid, super::events::log_bounds(&self.ctx))
                        .await
                        .map_err(|_| End::Left)?;
                    self.reset(ResetReason::Gone, head).await?;
                }
                Err(Some(end)) => return Err(end),
            }
        }
        for wake in batch {
            match wake {
                Wake::Comment(post, comment) if self.watched.contains(&post) => {
                    if let Ok(Some(post)) =
                        delivery::comment_seen(&self.ctx, self.who.uid, comment).await
                    {
                        self.event(
                            self.last,
                            names::COMMENT_NEW,
                            &CommentNew {
                                post_id: post,
                                comment_id: comment,
                            },
                        )
                        .await?;
                    }
                }
                Wake::Gone(post) if self.watched.contains(&post) => {
                    let seen =
                        delivery::visible(&self.ctx, self.who.uid, &[post], Place::Elsewhere).await;
                    if matches!(&seen, Ok(s) if !s.contains(&post)) {
                        self.watched.retain(|p| *p != post);
                        self.ctx.streams.watching(self.id, &self.watched);
                        self.event(
                            self.last,
                            names::POST_DELETED,
                            &PostDeleted { post_id: post },
                        )
                        .await?;
                    }
                }
                _ => {}
            }
        }
        if let Some(posts) = watch {
            self.set_watch(posts).await?;
        } else if resync {
            let all = self.watched.clone();
            self.send_counts(&all).await?;
        } else {
            counts.retain(|p| self.watched.contains(p));
            self.send_counts(&counts).await?;
        }
        Ok(())
    }

    async fn reset(&mut self, reason: ResetReason, head: EventId) -> Result<(), End> {
        self.last = head;
        crate::metrics::stream_reset();
        self.event(head, names::RESET, &Reset { reason }).await
    }

    async fn close(&mut self, how: Closing) -> Result<(), End> {
        match how {
            Closing::Replaced => {
                let last = self.last;
                self.reset(ResetReason::Replaced, last).await?;
            }
            Closing::Stopping => {
                // Soon, and spread: the clients of a stopping instance
                // reconnect to the others, not all in the same instant.
                let spread = crate::ids::now_ms().rem_euclid(1000) as u64;
                self.send(format!("retry: {}\n\n", 200 + spread).into_bytes())
                    .await?;
            }
        }
        Err(End::Closed)
    }

    /// Watches these posts (those the viewer may see), and sends their
    /// counts as they are.
    async fn set_watch(&mut self, posts: Vec<i64>) -> Result<(), End> {
        let mut posts = super::dedup(posts);
        posts.truncate(MAX_WATCHED);
        let seen = delivery::visible(&self.ctx, self.who.uid, &posts, Place::Elsewhere)
            .await
            .unwrap_or_default();
        posts.retain(|p| seen.contains(p));
        self.watched = posts;
        self.ctx.streams.watching(self.id, &self.watched);
        let all = self.watched.clone();
        self.send_counts(&all).await
    }

    async fn send_counts(&self, posts: &[i64]) -> Result<(), End> {
        if posts.is_empty() {
            return Ok(());
        }
        let Ok(counts) = delivery::counts(&self.ctx, self.who.uid, posts).await else {
            return Ok(());
        };
        for c in counts {
            self.event(self.last, names::POST_COUNTS, &c).await?;
        }
        Ok(())
    }

    /// Sends what the log holds after `self.last`, for this viewer. `Ok(false)`
    /// when `self.last` is no longer in the log; `Err(None)` when the store
    /// failed.
    async fn catch_up(&mut self) -> Result<bool, Option<End>> {
        loop {
            let read = self
                .ctx
                .live
                .events_after(self.who.uid, self.last, LOG_PAGE)
                .await
                .map_err(|_| None)?;
            let entries = match read {
                LogRead::Gone => return Ok(false),
                LogRead::After(entries) => entries,
            };
            let full = entries.len() == LOG_PAGE;
            self.deliver(entries).await.map_err(Some)?;
            if !full {
                return Ok(true);
            }
        }
    }

    /// Sends these log entries as this viewer may see them, in order. One
    /// `unread` follows the last entry of the page that moved the count.
    async fn deliver(&mut self, entries: Vec<LoggedEvent>) -> Result<(), End> {
        let uid = self.who.uid;
        let mut posts: HashMap<usize, i64> = HashMap::new();
        let mut last_unread = None;
        for (i, e) in entries.iter().enumerate() {
            match e.kind.as_str() {
                names::POST_NEW => {
                    if let Some(p) = field(&e.data, "postId") {
                        posts.insert(i, p);
                    }
                }
                names::NOTIFICATION | names::UNREAD => last_unread = Some(i),
                _ => {}
            }
        }
        let home: HashSet<i64> = if posts.is_empty() {
            HashSet::new()
        } else {
            delivery::entered_home(&self.ctx, uid, &posts)
                .await
                .map_err(|_| End::Left)?
        };
        for (i, e) in entries.iter().enumerate() {
            self.send_entry(i, e, &posts, &home).await?;
            self.last = e.id;
            if last_unread == Some(i) {
                self.unread_moved(e.id).await?;
            }
        }
        Ok(())
    }

    /// The unread count moved at log entry `id`: told now if the window
    /// allows (`UNREAD_WINDOW`), else at its end.
    async fn unread_moved(&mut self, id: EventId) -> Result<(), End> {
        let open = self
            .unread
            .told_at
            .is_some_and(|at| at.elapsed() < super::UNREAD_WINDOW);
        if open {
            self.unread.moved_since = true;
            return Ok(());
        }
        self.tell_unread(id).await
    }

    /// Tells the unread count as it is now, under `id`: the newest entry
    /// dealt with, so a client resuming from it misses nothing and gets
    /// nothing twice.
    async fn tell_unread(&mut self, id: EventId) -> Result<(), End> {
        self.unread = UnreadWindow {
            told_at: Some(tokio::time::Instant::now()),
            moved_since: false,
        };
        let unread = delivery::unread(&self.ctx, self.who.uid)
            .await
            .map_err(|_| End::Left)?;
        self.event(id, names::UNREAD, &UnreadCount { unread }).await
    }

    async fn send_entry(
        &self,
        i: usize,
        e: &LoggedEvent,
        posts: &HashMap<usize, i64>,
        home: &HashSet<i64>,
    ) -> Result<(), End> {
        match e.kind.as_str() {
            names::POST_NEW => {
                let (Some(post), Some(author)) = (posts.get(&i), field(&e.data, "authorUid"))
                else {
                    return Ok(());
                };
                if home.contains(post) {
                    let data = PostNew {
                        post_id: *post,
                        author_uid: author,
                    };
                    self.event(e.id, names::POST_NEW, &data).await?;
                }
            }
            names::NOTIFICATION => {
                let Some(id) = field(&e.data, "id") else {
                    return Ok(());
                };
                let shown: AppResult<_> = delivery::notification(&self.ctx, self.who.uid, id).await;
                if let Ok(Some(n)) = shown {
                    self.event(e.id, names::NOTIFICATION, &n).await?;
                }
            }
            // `unread` is sent after its page's last count-moving entry;
            // the log's own opening entry is never sent.
            names::UNREAD | LOG_OPENED => {}
            other => tracing::debug!(kind = other, "an unknown kind of log entry"),
        }
        Ok(())
    }
}

/// Returns once the instance stops (never, if it cannot tell).
async fn stopped(stopping: &mut tokio::sync::watch::Receiver<bool>) {
    if stopping.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// A whole number field of a log entry's JSON.
fn field(data: &str, name: &str) -> Option<i64> {
    serde_json::from_str::<serde_json::Value>(data)
        .ok()?
        .get(name)?
        .as_i64()
}

#[cfg(test)]
mod tests {
    use super::delivery::PostCounts;
    use super::*;

    #[test]
    fn a_frame_is_one_event_of_one_data_line() {
        let f = frame(
            EventId { ms: 5, seq: 1 },
            names::POST_COUNTS,
            &PostCounts {
                post_id: 1,
                like_count: 2,
                comment_count: 3,
                share_count: 0,
                liked_by_me: true,
            },
        );
        assert_eq!(
            String::from_utf8(f).unwrap(),
            "id: 5-1\nevent: post.counts\ndata: {\"postId\":1,\"likeCount\":2,\"commentCount\":3,\"shareCount\":0,\"likedByMe\":true}\n\n"
        );
    }
}
