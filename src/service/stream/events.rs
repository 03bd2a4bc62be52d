//! What writes tell live updates, and the messages that carry it between
//! instances. Two kinds of news:
//! - an account's: a post entered its home feed, it was notified, its
//!   unread count moved. Appended to the account's log (where it has one:
//!   only accounts that opened a stream lately do), then announced by uid,
//!   so that the instances holding its streams read the log from where each
//!   stream got to. The log is the one way events reach a stream, live or
//!   on resume, so both see them in the same order and none twice;
//! - a post's: its counts moved, a comment was added, it was deleted.
//!   Announced by post id, never logged: which posts a stream watches is the
//!   client's screen, which a resume names again (and is then sent the
//!   counts as they are).
//!
//! Both carry ids only: each instance decides, per viewer and at delivery,
//! what that viewer may be told. Telling never fails the write it follows.

use serde::{Deserialize, Serialize};

use crate::service::Context;
use crate::store::{LogBounds, NewEvent};

/// One message on the bus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum BusMessage {
    /// These accounts' logs grew.
    Logged { uids: Vec<i64> },
    /// A post's likes, comments or shares changed.
    Counts { post: i64 },
    /// A comment was added to a post (its counts moved too).
    Comment { post: i64, comment: i64 },
    /// A post was deleted, or removed from everyone but its author.
    Gone { post: i64 },
    /// An account's sessions were ended: its streams check theirs.
    Sessions { uid: i64 },
    /// The account's register closed this stream (one too many).
    Evicted { stream: i64 },
    /// Its account asks this stream to watch these posts instead.
    Watch {
        stream: i64,
        uid: i64,
        posts: Vec<i64>,
    },
}

/// The names of the events a stream sends, as the API documents them.
pub mod names {
    pub const READY: &str = "ready";
    pub const POST_NEW: &str = "post.new";
    pub const POST_DELETED: &str = "post.deleted";
    pub const POST_COUNTS: &str = "post.counts";
    pub const COMMENT_NEW: &str = "comment.new";
    pub const NOTIFICATION: &str = "notification";
    pub const UNREAD: &str = "unread";
    pub const RESET: &str = "reset";
}

pub fn log_bounds(ctx: &Context) -> LogBounds {
    LogBounds {
        max_events: ctx.settings.stream.log_events,
        max_age_ms: ctx.settings.stream.log_minutes * 60 * 1000,
    }
}

/// Publishes `message`, in the background.
pub fn announce(ctx: &Context, message: BusMessage) {
    let live = ctx.live.clone();
    tokio::spawn(async move { publish_now(live.as_ref(), &message).await });
}

async fn publish_now(live: &dyn crate::store::LiveStore, message: &BusMessage) {
    let Ok(text) = serde_json::to_string(message) else {
        return;
    };
    if let Err(e) = live.publish(&text).await {
        crate::metrics::stream_announce_failed();
        tracing::debug!(error = %e, "could not announce a live update");
    }
}

/// Appends events to their accounts' logs and announces the logs that
/// grew, in the background.
pub fn log(ctx: &Context, events: Vec<NewEvent>) {
    if events.is_empty() {
        return;
    }
    let live = ctx.live.clone();
    let bounds = log_bounds(ctx);
    tokio::spawn(async move { log_now(live.as_ref(), &events, bounds).await });
}

/// `log`, waited for: for a caller already in the background (a fan-out).
pub async fn log_now(live: &dyn crate::store::LiveStore, events: &[NewEvent], bounds: LogBounds) {
    match live.append_events(events, bounds).await {
        Ok(uids) if uids.is_empty() => {}
        Ok(uids) => publish_now(live, &BusMessage::Logged { uids }).await,
        Err(e) => {
            crate::metrics::stream_announce_failed();
            tracing::debug!(error = %e, "could not log live updates");
        }
    }
}

fn event(uid: i64, kind: &str, data: serde_json::Value) -> NewEvent {
    NewEvent {
        uid,
        kind: kind.to_string(),
        data: data.to_string(),
    }
}

/// `post.new` events for these accounts, whose home feeds `post` entered.
pub fn posts_entered(post: i64, author: i64, uids: &[i64]) -> Vec<NewEvent> {
    uids.iter()
        .map(|u| {
            event(
                *u,
                names::POST_NEW,
                serde_json::json!({"postId": post, "authorUid": author}),
            )
        })
        .collect()
}

/// `uid` was sent notification `id`.
pub fn notified(ctx: &Context, uid: i64, id: i64) {
    log(
        ctx,
        vec![event(
            uid,
            names::NOTIFICATION,
            serde_json::json!({"id": id}),
        )],
    );
}

/// `uid`'s unread count moved otherwise than by a new notification (read).
pub fn unread_changed(ctx: &Context, uid: i64) {
    log(ctx, vec![event(uid, names::UNREAD, serde_json::json!({}))]);
}

pub fn counts_changed(ctx: &Context, post: i64) {
    announce(ctx, BusMessage::Counts { post });
}

pub fn comment_added(ctx: &Context, post: i64, comment: i64) {
    announce(ctx, BusMessage::Comment { post, comment });
}

pub fn post_gone(ctx: &Context, post: i64) {
    announce(ctx, BusMessage::Gone { post });
}

pub fn sessions_ended(ctx: &Context, uid: i64) {
    announce(ctx, BusMessage::Sessions { uid });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_back() {
        for m in [
            BusMessage::Logged { uids: vec![1, 2] },
            BusMessage::Counts { post: 3 },
            BusMessage::Comment {
                post: 3,
                comment: 4,
            },
            BusMessage::Gone { post: 3 },
            BusMessage::Sessions { uid: 1 },
            BusMessage::Evicted { stream: 9 },
            BusMessage::Watch {
                stream: 9,
                uid: 1,
                posts: vec![3],
            },
        ] {
            let text = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<BusMessage>(&text).unwrap(), m);
        }
    }
}
