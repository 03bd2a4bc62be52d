//! The Redis live store's key lifetimes, asserted on a real redis-server
//! (started by scripts/test.sh), where the API suite cannot see them: a
//! home timeline lives a day past its owner's last read, and pushes from
//! followees neither keep an unread timeline alive, nor create one, nor let
//! one grow unbounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use moments::ids::{first_id_at, next_id, now_ms};
use moments::store::redis::{is_cluster_url, RedisLive, HOME_TTL_SECS};
use moments::store::{LiveFill, LiveRead, LiveStore, Owner, SetKey, SetRead};

fn redis_url() -> String {
    std::env::var("MOMENTS_TEST_REDIS_URL").unwrap_or_else(|_| {
        panic!(
            "MOMENTS_TEST_REDIS_URL is not set: run scripts/test.sh, \
             which starts redis-server and nx-27017"
        )
    })
}

struct Live {
    store: RedisLive,
    raw: Raw,
    prefix: String,
}

/// The test's own connection beside the store's, to one node or to a
/// cluster (seed URLs joined by commas, as the service takes them), so
/// these checks run on both.
enum Raw {
    Node(redis::aio::MultiplexedConnection),
    Cluster(redis::cluster_async::ClusterConnection),
}

impl redis::aio::ConnectionLike for Raw {
    fn req_packed_command<'a>(
        &'a mut self,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            Raw::Node(c) => c.req_packed_command(cmd),
            Raw::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            Raw::Node(c) => c.req_packed_commands(cmd, offset, count),
            Raw::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        0
    }
}

async fn live() -> Live {
    let url = redis_url();
    let prefix = format!("rl{}:", next_id());
    let store = RedisLive::connect(&url, &prefix, 3600).await.unwrap();
    let raw = if is_cluster_url(&url) {
        let nodes: Vec<&str> = url.split(',').collect();
        Raw::Cluster(
            redis::cluster::ClusterClient::new(nodes)
                .unwrap()
                .get_async_connection()
                .await
                .unwrap(),
        )
    } else {
        Raw::Node(
            redis::Client::open(url.as_str())
                .unwrap()
                .get_multiplexed_async_connection()
                .await
                .unwrap(),
        )
    };
    Live { store, raw, prefix }
}

impl Live {
    fn home(&self, uid: i64) -> String {
        format!("{}{{u:{uid}}}:home", self.prefix)
    }

    async fn ttl(&mut self, uid: i64) -> i64 {
        redis::cmd("TTL")
            .arg(self.home(uid))
            .query_async(&mut self.raw)
            .await
            .unwrap()
    }

    async fn set_ttl(&mut self, uid: i64, secs: i64) {
        redis::cmd("EXPIRE")
            .arg(self.home(uid))
            .arg(secs)
            .query_async::<()>(&mut self.raw)
            .await
            .unwrap();
    }

    async fn card(&mut self, uid: i64) -> i64 {
        redis::cmd("ZCARD")
            .arg(self.home(uid))
            .query_async(&mut self.raw)
            .await
            .unwrap()
    }

    /// Reads the timeline as `GET /feed` does; `None` is absent (rebuilt on read).
    async fn read_home(&self, uid: i64) -> Option<Vec<i64>> {
        let read = LiveRead {
            sets: vec![SetRead {
                key: SetKey::Home(uid),
                top: 100,
                probe: None,
                below: None,
            }],
            gens: vec![Owner::User(uid)],
            ..Default::default()
        };
        let answer = self.store.read(&read).await.unwrap();
        answer.sets[0]
            .as_ref()
            .map(|view| view.top.iter().map(|(member, _)| *member).collect())
    }

    /// Stores a built timeline, as a rebuild on read does.
    async fn build_home(&self, uid: i64, posts: &[i64]) {
        let gens = self
            .store
            .read(&LiveRead {
                gens: vec![Owner::User(uid)],
                ..Default::default()
            })
            .await
            .unwrap()
            .gens;
        let members = posts.iter().map(|p| (*p, *p)).collect();
        self.store
            .fill(&LiveFill {
                sets: vec![(SetKey::Home(uid), members, gens[0])],
                ..Default::default()
            })
            .await
            .unwrap();
    }
}

/// Increasing post ids, one per millisecond from an hour ago, each made at a
/// millisecond that does (or does not) carry the timelines' housekeeping.
fn post_ids(housekeeping: &[bool]) -> Vec<i64> {
    let mut ms = now_ms() - 3_600_000;
    let mut ids = Vec::with_capacity(housekeeping.len());
    for wanted in housekeeping {
        while (ms % 16 == 0) != *wanted {
            ms += 1;
        }
        ids.push(first_id_at(ms));
        ms += 1;
    }
    ids
}

#[tokio::test]
async fn reading_a_timeline_keeps_it_a_day_and_pushes_do_not() {
    let mut live = live().await;
    let reader = next_id();
    live.build_home(reader, &[]).await;
    live.set_ttl(reader, 100).await;
    assert!(live.read_home(reader).await.is_some());
    let after_read = live.ttl(reader).await;
    assert!(
        after_read > 100 && after_read <= HOME_TTL_SECS as i64,
        "a read should renew the day: TTL {after_read}"
    );

    // A reader who stopped reading: pushes, housekeeping ones included, leave
    // the expiry where the last read put it.
    let idle = next_id();
    live.build_home(idle, &[]).await;
    live.set_ttl(idle, 100).await;
    for post in post_ids(&[true, false, true, false]) {
        live.store
            .push_to_timelines(post, &[idle], 800)
            .await
            .unwrap();
    }
    let after_pushes = live.ttl(idle).await;
    assert!(
        (1..=100).contains(&after_pushes),
        "pushes must not keep an unread timeline alive: TTL {after_pushes}"
    );
    assert_eq!(live.card(idle).await, 1 + 4, "sentinel plus four posts");
}

#[tokio::test]
async fn a_push_skips_a_timeline_that_is_not_there() {
    let mut live = live().await;
    let (gone, reader) = (next_id(), next_id());
    live.build_home(reader, &[]).await;
    for post in post_ids(&[true, false]) {
        live.store
            .push_to_timelines(post, &[gone, reader], 800)
            .await
            .unwrap();
    }
    assert_eq!(
        live.card(gone).await,
        0,
        "an absent timeline stays absent: its owner's next read rebuilds it in full"
    );
    assert_eq!(live.read_home(gone).await, None);
    assert_eq!(live.read_home(reader).await.map(|p| p.len()), Some(2));
}

#[tokio::test]
async fn pushes_trim_a_timeline_to_its_maximum_and_keep_the_newest() {
    let mut live = live().await;
    let reader = next_id();
    live.build_home(reader, &[]).await;
    let max = 5;
    let mut housekeeping = vec![false; 12];
    housekeeping.push(true);
    let posts = post_ids(&housekeeping);
    for post in &posts {
        live.store
            .push_to_timelines(*post, &[reader], max)
            .await
            .unwrap();
    }
    assert_eq!(
        live.card(reader).await,
        max as i64 + 1,
        "the sentinel and the newest {max} posts"
    );
    let newest: Vec<i64> = posts.iter().rev().take(max).copied().collect();
    assert_eq!(
        live.read_home(reader).await,
        Some(newest),
        "the housekeeping push trims to the newest {max}, the sentinel stays"
    );
}

#[tokio::test]
async fn a_set_without_its_sentinel_is_absent_until_rebuilt() {
    // What earlier versions made by pushing onto an absent timeline: one
    // post, not the followees' newest. Reading it as built would hide the rest.
    let mut live = live().await;
    let partial = next_id();
    let [old, new] = post_ids(&[false, false])[..] else {
        unreachable!()
    };
    redis::cmd("ZADD")
        .arg(live.home(partial))
        .arg(old)
        .arg(old)
        .query_async::<()>(&mut live.raw)
        .await
        .unwrap();
    assert_eq!(live.read_home(partial).await, None, "rebuilt on read");
    live.store
        .push_to_timelines(new, &[partial], 800)
        .await
        .unwrap();
    assert_eq!(live.read_home(partial).await, None, "still rebuilt on read");
    live.build_home(partial, &[old, new]).await;
    assert_eq!(live.read_home(partial).await, Some(vec![new, old]));
    assert_eq!(live.card(partial).await, 3, "the sentinel and both posts");
}

#[tokio::test]
async fn last_writer_wins_sets_merge_and_take_any_order() {
    let live = live().await;
    moments::store::live_checks::last_writer_wins_sets(&live.store, next_id()).await;
}

/// The like-array queue (service/jobs/like_arrays.rs): what one applier took and
/// never acknowledged (it died) is taken over by another once idle, and
/// what was acknowledged is gone.
#[tokio::test]
async fn the_like_array_queue_hands_a_dead_appliers_entries_to_another() {
    let l = live().await;
    let (a, b) = (id_of("dead"), id_of("alive"));
    l.store.queue_array_refreshes(&[11, 12, 11]).await.unwrap();
    let taken = l.store.take_array_refreshes(&a, 10, 60_000).await.unwrap();
    let posts: Vec<i64> = taken.iter().map(|(_, p)| *p).collect();
    assert_eq!(posts, vec![11, 12, 11], "in the order queued");
    // Not idle long enough yet: nobody else gets them, and nothing is new.
    assert!(l
        .store
        .take_array_refreshes(&b, 10, 60_000)
        .await
        .unwrap()
        .is_empty());
    // Idle past the limit (0 here): the other applier takes them over.
    let again = l.store.take_array_refreshes(&b, 10, 0).await.unwrap();
    assert_eq!(again, taken);
    l.store
        .ack_array_refreshes(&again.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>())
        .await
        .unwrap();
    assert!(l
        .store
        .take_array_refreshes(&a, 10, 0)
        .await
        .unwrap()
        .is_empty());
    // New entries after that are delivered once.
    l.store.queue_array_refreshes(&[13]).await.unwrap();
    let fresh = l.store.take_array_refreshes(&b, 10, 60_000).await.unwrap();
    assert_eq!(fresh.iter().map(|(_, p)| *p).collect::<Vec<_>>(), vec![13]);
}

fn id_of(name: &str) -> String {
    format!("{name}-{}", next_id())
}

#[tokio::test]
async fn event_logs_resume_in_order_and_say_gone_past_their_bounds() {
    let live = live().await;
    moments::store::live_checks::event_logs(&live.store, next_id()).await;
}

#[tokio::test]
async fn stream_tickets_are_taken_once_and_registers_close_the_oldest() {
    let live = live().await;
    moments::store::live_checks::stream_tickets_and_registers(&live.store, next_id()).await;
}

#[tokio::test]
async fn the_bus_carries_a_message_to_every_listener() {
    use moments::store::{BusNote, StreamStore};
    use std::time::Duration;
    let a = live().await;
    // Another instance: its own store on the same Redis and prefix.
    let b = RedisLive::connect(&redis_url(), &a.prefix, 3600)
        .await
        .unwrap();
    let mut on_a = a.store.bus().await.unwrap();
    let mut on_b = b.bus().await.unwrap();
    // The listeners subscribe in the background: publish until both hear.
    async fn heard(bus: &mut tokio::sync::broadcast::Receiver<BusNote>) -> bool {
        while let Ok(Ok(note)) = tokio::time::timeout(Duration::from_millis(100), bus.recv()).await
        {
            if note == BusNote::Message("hello".into()) {
                return true;
            }
        }
        false
    }
    let (mut a_heard, mut b_heard) = (false, false);
    for _ in 0..100 {
        a.store.publish("hello").await.unwrap();
        a_heard |= heard(&mut on_a).await;
        b_heard |= heard(&mut on_b).await;
        if a_heard && b_heard {
            break;
        }
    }
    assert!(a_heard, "the publisher's own listener heard it");
    assert!(b_heard, "the other instance's listener heard it");
}
