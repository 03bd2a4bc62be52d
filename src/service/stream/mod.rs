//! Live updates: `GET /api/v1/stream`, Server-Sent Events of what changed
//! for the signed-in account, resumable without loss.
//!
//! - `events`: what writes tell, and the bus messages between instances;
//! - `connection`: one open stream, from its log and the bus to its frames;
//! - `delivery`: what a viewer may be told, asked at delivery;
//! - `tickets`: single-use tickets for clients that cannot send headers.
//!
//! This module is the instance's hub: it holds the streams open here,
//! bounds them (per instance here, per account through the live store's
//! register), routes what the bus says to the streams it concerns, renews
//! their entries in the register, keeps their logs (or finds them lost), and
//! closes them all when the instance stops.

pub mod connection;
pub mod delivery;
pub mod events;
pub mod tickets;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast::error::RecvError, mpsc};

use crate::error::{AppError, AppResult};
use crate::service::accounts::Authed;
use crate::service::Context;
use crate::store::{BusNote, EventId};
use events::BusMessage;

/// Posts one stream watches at most (`?watch=`, `PUT /stream/{id}/watch`).
pub const MAX_WATCHED: usize = 50;
/// Wakes a stream holds before it only notes that it missed some (and
/// then reads everything again).
const WAKES: usize = 64;
/// A post's watchers here are told its counts moved at most once per
/// window: a like storm on a watched post would otherwise have every
/// watcher rebuild the post for itself once per like. The first change
/// is told at once; any later in the window are told once, at its end,
/// so the last state always arrives.
pub const COUNTS_WINDOW: Duration = Duration::from_secs(1);
/// A stream tells its viewer's unread count at most once per window, for
/// the same reason: each telling counts what the notifications list shows
/// (up to `notifications::UNREAD_SCAN` of them), and a stranger's likes
/// can move it as often as they are allowed to like. The first move is
/// told at once, the rest once at the window's end, as it is by then.
pub const UNREAD_WINDOW: Duration = Duration::from_secs(1);

/// What the hub asks of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wake {
    /// Its account's log grew.
    Log,
    Counts(i64),
    Comment(i64, i64),
    Gone(i64),
    Watch(Vec<i64>),
    /// Its account's sessions changed: is its own still honoured?
    CheckSession,
    /// Read the log and every watched post's counts again: the bus may have
    /// lost something (it was lost and heard again, or fell behind).
    Resync,
    /// Its log may be gone (the live store lost it).
    LogMayBeGone,
    Close(Closing),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closing {
    /// One stream too many for its account: this, the oldest, goes.
    Replaced,
    /// The instance is stopping.
    Stopping,
}

/// A stream as the hub routes to it.
struct Handle {
    uid: i64,
    wakes: mpsc::Sender<Wake>,
    watched: Vec<i64>,
    /// Set when a wake could not be queued: the stream reads all again.
    missed: Arc<AtomicBool>,
}

#[derive(Default)]
struct Registry {
    streams: HashMap<i64, Handle>,
    by_uid: HashMap<i64, Vec<i64>>,
    watchers: HashMap<i64, Vec<i64>>,
    /// The posts whose counts window is open (`COUNTS_WINDOW`), and
    /// whether their counts moved again since their watchers were told.
    counts_windows: HashMap<i64, bool>,
}

impl Registry {
    fn wake(&self, stream: i64, wake: Wake) {
        if let Some(h) = self.streams.get(&stream) {
            if h.wakes.try_send(wake).is_err() {
                h.missed.store(true, Ordering::SeqCst);
            }
        }
    }

    fn wake_account(&self, uid: i64, wake: &Wake) {
        for s in self.by_uid.get(&uid).into_iter().flatten() {
            self.wake(*s, wake.clone());
        }
    }

    fn wake_watchers(&self, post: i64, wake: &Wake) {
        for s in self.watchers.get(&post).into_iter().flatten() {
            self.wake(*s, wake.clone());
        }
    }

    fn unwatch(&mut self, stream: i64, posts: &[i64]) {
        for p in posts {
            if let Some(w) = self.watchers.get_mut(p) {
                w.retain(|s| *s != stream);
                if w.is_empty() {
                    self.watchers.remove(p);
                }
            }
        }
    }
}

/// The streams this instance holds open.
pub struct Hub {
    registry: Mutex<Registry>,
    open: AtomicUsize,
    /// Set when the instance stops: every stream closes.
    stopping: tokio::sync::watch::Sender<bool>,
    /// `COUNTS_WINDOW`, shorter in unit tests.
    counts_window: Duration,
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            registry: Mutex::default(),
            open: AtomicUsize::new(0),
            stopping: tokio::sync::watch::channel(false).0,
            counts_window: COUNTS_WINDOW,
        }
    }
}

/// What opening a stream takes, read off the request by the HTTP layer.
pub struct Opening {
    pub who: Authed,
    /// `Last-Event-ID` (or `lastEventId`): where the client got to.
    pub resume: Option<Resume>,
    pub watch: Vec<i64>,
    /// Cuts the client's connection at once (a slow reader), if the HTTP
    /// layer can.
    pub cut: Option<Box<dyn FnOnce() + Send>>,
}

/// Where a reconnecting client says it got to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// An id this service wrote: every event after it follows, if the log
    /// still holds them.
    After(EventId),
    /// An id no stream of this service wrote (`Last-Event-ID` is opaque to
    /// a browser, and a proxy or an older service on the same address may
    /// have set it): nothing can be resumed from it, so it gets a `reset`,
    /// as an id that fell out of the log does, not a refusal a browser
    /// would retry forever.
    Unplaceable,
}

/// An open stream: its id, and its frames as they are to be written.
pub struct Opened {
    pub id: i64,
    pub frames: mpsc::Receiver<Vec<u8>>,
}

impl Hub {
    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn open_count(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Starts routing what the bus says, and the upkeep of the streams
    /// held here: one task.
    pub async fn spawn(ctx: Context) -> anyhow::Result<tokio::task::JoinHandle<()>> {
        let mut bus = ctx
            .live
            .bus()
            .await
            .map_err(|e| anyhow::anyhow!("listening on the live-update bus: {e}"))?;
        Ok(tokio::spawn(async move {
            let hub = ctx.streams.clone();
            let every = Duration::from_secs(ctx.settings.stream.heartbeat_secs);
            let mut upkeep = tokio::time::interval(every);
            upkeep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    note = bus.recv() => match note {
                        Ok(BusNote::Message(text)) => match serde_json::from_str::<BusMessage>(&text) {
                            Ok(m) => hub.route(m),
                            Err(e) => tracing::debug!(error = %e, "an unreadable bus message"),
                        },
                        Ok(BusNote::Resubscribed) | Err(RecvError::Lagged(_)) => hub.wake_all(Wake::Resync),
                        Err(RecvError::Closed) => return,
                    },
                    _ = upkeep.tick() => hub.upkeep(&ctx).await,
                }
            }
        }))
    }

    fn wake_all(&self, wake: Wake) {
        let registry = self.registry();
        for id in registry.streams.keys() {
            registry.wake(*id, wake.clone());
        }
    }

    fn route(self: &Arc<Self>, message: BusMessage) {
        let mut registry = self.registry();
        match message {
            BusMessage::Logged { uids } => {
                for uid in uids {
                    registry.wake_account(uid, &Wake::Log);
                }
            }
            BusMessage::Counts { post } => self.counts_moved(&mut registry, post),
            BusMessage::Comment { post, comment } => {
                // Each comment is news of its own; the count it moves is
                // told as every other count is.
                registry.wake_watchers(post, &Wake::Comment(post, comment));
                self.counts_moved(&mut registry, post);
            }
            BusMessage::Gone { post } => registry.wake_watchers(post, &Wake::Gone(post)),
            BusMessage::Sessions { uid } => registry.wake_account(uid, &Wake::CheckSession),
            BusMessage::Evicted { stream } => registry.wake(stream, Wake::Close(Closing::Replaced)),
            BusMessage::Watch { stream, uid, posts } => {
                if registry.streams.get(&stream).is_some_and(|h| h.uid == uid) {
                    registry.wake(stream, Wake::Watch(posts));
                }
            }
        }
    }

    /// Tells the post's watchers here that its counts moved: now, if its
    /// window is closed (and opens it), else once when it closes.
    fn counts_moved(self: &Arc<Self>, registry: &mut Registry, post: i64) {
        if !registry.watchers.contains_key(&post) {
            return;
        }
        if let Some(moved) = registry.counts_windows.get_mut(&post) {
            *moved = true;
            return;
        }
        registry.counts_windows.insert(post, false);
        registry.wake_watchers(post, &Wake::Counts(post));
        let hub = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(hub.counts_window).await;
                let mut registry = hub.registry();
                match registry.counts_windows.get_mut(&post) {
                    // Told now, with whatever the counts are by then; the
                    // next window starts with it.
                    Some(moved) if *moved => {
                        *moved = false;
                        registry.wake_watchers(post, &Wake::Counts(post));
                    }
                    _ => {
                        registry.counts_windows.remove(&post);
                        return;
                    }
                }
            }
        });
    }

    /// Renews the register's entries of the streams held here, keeps their
    /// accounts' logs, and has those whose logs are gone (the live store
    /// lost them) say `reset`.
    async fn upkeep(&self, ctx: &Context) {
        let held: Vec<(i64, i64)> = {
            let registry = self.registry();
            registry
                .streams
                .iter()
                .map(|(id, h)| (h.uid, *id))
                .collect()
        };
        if held.is_empty() {
            return;
        }
        let now = crate::ids::now_ms();
        if let Err(e) = ctx.live.renew_streams(&held, now).await {
            tracing::debug!(error = %e, "could not renew the streams' register");
        }
        let mut uids: Vec<i64> = held.iter().map(|(u, _)| *u).collect();
        uids.sort_unstable();
        uids.dedup();
        match ctx
            .live
            .keep_event_logs(&uids, events::log_bounds(ctx))
            .await
        {
            Ok(exist) => {
                let registry = self.registry();
                for (uid, exists) in uids.iter().zip(exist) {
                    if !exists {
                        registry.wake_account(*uid, &Wake::LogMayBeGone);
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e, "could not check the streams' logs"),
        }
    }

    /// Opens a stream: 503 past this instance's bound or while it stops;
    /// the account's oldest stream is closed past the account's.
    pub async fn open(self: &Arc<Self>, ctx: &Context, opening: Opening) -> AppResult<Opened> {
        let settings = &ctx.settings.stream;
        if *self.stopping.borrow() {
            return Err(AppError::Overloaded("stopping"));
        }
        if self.open.fetch_add(1, Ordering::SeqCst) >= settings.per_instance {
            self.open.fetch_sub(1, Ordering::SeqCst);
            crate::metrics::stream_refused();
            return Err(AppError::Overloaded("live-update streams"));
        }
        // Given back unless the stream opens.
        let mut slot = Slot(self.clone(), true);
        let uid = opening.who.uid;
        let expires_at = crate::service::accounts::honoured_until(ctx, &opening.who)
            .await?
            .ok_or(AppError::Unauthorized("invalid or expired token"))?;
        let id = crate::ids::next_id();
        let now = crate::ids::now_ms();
        let stale = now - 3 * (settings.heartbeat_secs as i64) * 1000;
        let head = ctx
            .live
            .open_event_log(uid, events::log_bounds(ctx))
            .await?;
        let replaced = ctx
            .live
            .register_stream(uid, id, now, stale, settings.per_account)
            .await?;
        for stream in replaced {
            events::announce(ctx, BusMessage::Evicted { stream });
        }
        let (wakes_tx, wakes) = mpsc::channel(WAKES);
        let (frames_tx, frames) = mpsc::channel(settings.send_buffer);
        let missed = Arc::new(AtomicBool::new(false));
        self.registry().streams.insert(
            id,
            Handle {
                uid,
                wakes: wakes_tx,
                watched: Vec::new(),
                missed: missed.clone(),
            },
        );
        self.registry().by_uid.entry(uid).or_default().push(id);
        slot.1 = false;
        crate::metrics::stream_opened();
        let conn = connection::Connection {
            ctx: ctx.clone(),
            id,
            who: opening.who,
            expires_at,
            last: head,
            frames: frames_tx,
            wakes,
            missed,
            watched: Vec::new(),
            stopping: self.stopping.subscribe(),
            unread: connection::UnreadWindow::default(),
        };
        let hub = self.clone();
        let ctx = ctx.clone();
        let (resume, watch, cut) = (opening.resume, opening.watch, opening.cut);
        tokio::spawn(async move {
            let end = conn.run(resume, watch).await;
            if end == connection::End::Slow {
                crate::metrics::stream_slow_reader_dropped();
                if let Some(cut) = cut {
                    cut();
                }
            }
            hub.forget(id);
            if let Err(e) = ctx.live.unregister_stream(uid, id).await {
                tracing::debug!(error = %e, "could not take a closed stream off its register");
            }
        });
        Ok(Opened { id, frames })
    }

    /// Records which posts a stream now watches.
    pub(crate) fn watching(&self, stream: i64, posts: &[i64]) {
        let mut registry = self.registry();
        let Some(before) = registry
            .streams
            .get_mut(&stream)
            .map(|h| std::mem::replace(&mut h.watched, posts.to_vec()))
        else {
            return;
        };
        registry.unwatch(stream, &before);
        for p in posts {
            registry.watchers.entry(*p).or_default().push(stream);
        }
    }

    fn forget(&self, stream: i64) {
        let mut registry = self.registry();
        let Some(h) = registry.streams.remove(&stream) else {
            return;
        };
        registry.unwatch(stream, &h.watched);
        if let Some(s) = registry.by_uid.get_mut(&h.uid) {
            s.retain(|x| *x != stream);
            if s.is_empty() {
                registry.by_uid.remove(&h.uid);
            }
        }
        drop(registry);
        self.open.fetch_sub(1, Ordering::SeqCst);
        crate::metrics::stream_closed();
    }

    /// Refuses new streams and closes those open, each with a last
    /// `retry:`, so that their clients reconnect elsewhere; waits until
    /// they are closed or `deadline`.
    pub async fn close_all(&self, deadline: tokio::time::Instant) {
        self.stopping.send_replace(true);
        while self.open_count() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A reserved place among the instance's streams, given back if the
/// stream fails to open.
struct Slot(Arc<Hub>, bool);

impl Drop for Slot {
    fn drop(&mut self) {
        if self.1 {
            self.0.open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Changes which posts a stream watches, wherever it is held: of `posts`,
/// those the caller may see (the answer), if the stream is the caller's and
/// open; 404 otherwise.
pub async fn watch(ctx: &Context, uid: i64, stream: i64, posts: Vec<i64>) -> AppResult<Vec<i64>> {
    if posts.len() > MAX_WATCHED {
        return Err(AppError::invalid(
            "posts",
            format!("at most {MAX_WATCHED} posts"),
        ));
    }
    if !ctx.live.stream_registered(uid, stream).await? {
        return Err(AppError::NotFound("stream"));
    }
    let posts = dedup(posts);
    let seen = delivery::visible(
        ctx,
        uid,
        &posts,
        crate::service::read::visibility::Place::Elsewhere,
    )
    .await?;
    let posts: Vec<i64> = posts.into_iter().filter(|p| seen.contains(p)).collect();
    events::announce(
        ctx,
        BusMessage::Watch {
            stream,
            uid,
            posts: posts.clone(),
        },
    );
    Ok(posts)
}

pub(crate) fn dedup(posts: Vec<i64>) -> Vec<i64> {
    let mut seen = std::collections::HashSet::new();
    posts.into_iter().filter(|p| seen.insert(*p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream watching `post`, as the hub holds it, and its wakes.
    fn watcher(hub: &Hub, stream: i64, post: i64) -> mpsc::Receiver<Wake> {
        let (wakes, rx) = mpsc::channel(WAKES);
        hub.registry().streams.insert(
            stream,
            Handle {
                uid: 1,
                wakes,
                watched: Vec::new(),
                missed: Arc::new(AtomicBool::new(false)),
            },
        );
        hub.watching(stream, &[post]);
        rx
    }

    /// Waits for the next wake, failing past a bound.
    async fn next(rx: &mut mpsc::Receiver<Wake>) -> Option<Wake> {
        tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("a wake within 10 s")
    }

    #[tokio::test]
    async fn a_posts_counts_are_told_once_a_window_the_last_change_at_its_end() {
        const WINDOW: Duration = Duration::from_millis(300);
        let hub = Arc::new(Hub {
            counts_window: WINDOW,
            ..Hub::default()
        });
        let mut rx = watcher(&hub, 10, 5);
        for _ in 0..100 {
            hub.route(BusMessage::Counts { post: 5 });
        }
        assert_eq!(
            rx.try_recv().ok(),
            Some(Wake::Counts(5)),
            "the first at once"
        );
        assert!(rx.try_recv().is_err(), "the rest wait for the window's end");
        // The changes made within the window: told once, when it ends.
        assert_eq!(next(&mut rx).await, Some(Wake::Counts(5)));
        assert!(rx.try_recv().is_err());
        // A quiet window closes; nothing more is told.
        let quiet = tokio::time::timeout(3 * WINDOW, rx.recv()).await;
        assert!(quiet.is_err(), "{quiet:?}");
        assert!(hub.registry().counts_windows.is_empty());
        // The next change, after it, is told at once again; a comment's
        // count rides the same window.
        hub.route(BusMessage::Comment {
            post: 5,
            comment: 7,
        });
        hub.route(BusMessage::Counts { post: 5 });
        assert_eq!(rx.try_recv().ok(), Some(Wake::Comment(5, 7)));
        assert_eq!(rx.try_recv().ok(), Some(Wake::Counts(5)));
        assert!(rx.try_recv().is_err());
        assert_eq!(next(&mut rx).await, Some(Wake::Counts(5)));
        // A post nobody here watches opens no window.
        hub.route(BusMessage::Counts { post: 6 });
        assert!(!hub.registry().counts_windows.contains_key(&6));
    }
}
