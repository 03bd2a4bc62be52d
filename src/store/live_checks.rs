//! Behaviours every `LiveStore` adapter must share, written once and run
//! against each (the in-process store in its unit tests, Redis in
//! `tests/redis_live.rs`). Panics name what differs: they are its report.
#![allow(clippy::expect_used)]

use super::{Changes, LiveChange, LiveFill, LiveRead, LiveStore, Owner, SetKey, SetRead};

async fn members(live: &dyn LiveStore, key: SetKey) -> Option<Vec<(i64, i64)>> {
    let read = LiveRead {
        sets: vec![SetRead {
            key,
            top: 100,
            probe: None,
            below: None,
        }],
        ..Default::default()
    };
    let mut answer = live.read(&read).await.expect("read");
    answer.sets.pop().flatten().map(|v| {
        assert_eq!(
            v.count as usize,
            v.top.len(),
            "count and members of {key:?}"
        );
        let mut m = v.top;
        m.sort_unstable();
        m
    })
}

async fn apply(live: &dyn LiveStore, key: SetKey, expected_gen: Option<u64>, change: LiveChange) {
    let changes = Changes {
        owner: key.owner(),
        expected_gen,
        changes: vec![change],
    };
    live.apply(&[changes]).await.expect("apply");
}

/// Last-writer-wins sets take changes in any order and merge rebuilds with
/// what changed while the documents were read.
pub async fn last_writer_wins_sets(live: &dyn LiveStore, post: i64) {
    let key = SetKey::PostLikers(post);
    let (u1, u2, u3) = (101, 102, 103);
    let gen = live
        .read(&LiveRead {
            gens: vec![Owner::Post(post)],
            ..Default::default()
        })
        .await
        .expect("read")
        .gens[0];
    // While a rebuild reads the documents (which had no likes yet), u1 and
    // u2 like and u2 unlikes.
    apply(live, key, None, LiveChange::LwwAdd(key, u1, 10)).await;
    apply(live, key, None, LiveChange::LwwAdd(key, u2, 11)).await;
    apply(live, key, None, LiveChange::LwwRemove(key, u2, 11)).await;
    assert_eq!(
        members(live, key).await,
        None,
        "changes do not create the set"
    );
    // The rebuild lands although the generation moved, and keeps them.
    let fill = LiveFill {
        sets: vec![(key, Vec::new(), gen)],
        ..Default::default()
    };
    live.fill(&fill).await.expect("fill");
    assert_eq!(
        members(live, key).await,
        Some(vec![(u1, 10)]),
        "merged rebuild"
    );

    // A removal that overtook its add keeps the add out; a newer like is in.
    apply(live, key, None, LiveChange::LwwRemove(key, u1, 10)).await;
    apply(live, key, None, LiveChange::LwwAdd(key, u1, 10)).await;
    assert_eq!(
        members(live, key).await,
        Some(vec![]),
        "a late add stays out"
    );
    apply(live, key, None, LiveChange::LwwAdd(key, u1, 12)).await;
    // Writers that both read an old generation do not conflict.
    apply(live, key, Some(gen), LiveChange::LwwAdd(key, u3, 13)).await;
    assert_eq!(
        members(live, key).await,
        Some(vec![(u1, 12), (u3, 13)]),
        "concurrent likes keep the set"
    );
    // A stale rebuild (from before u2's unlike and u3's like) changes nothing.
    let stale = LiveFill {
        sets: vec![(key, vec![(u2, 11)], gen)],
        ..Default::default()
    };
    live.fill(&stale).await.expect("fill");
    assert_eq!(
        members(live, key).await,
        Some(vec![(u1, 12), (u3, 13)]),
        "stale rebuild"
    );
}

/// Accounts' event logs (`StreamStore`): nothing kept for an account
/// without one, every event after an id it holds in order, "gone" for an
/// id it no longer holds or never made. `uid` must be fresh.
pub async fn event_logs(live: &dyn LiveStore, uid: i64) {
    use super::{EventId, LogBounds, LogRead, NewEvent};
    let bounds = LogBounds {
        max_events: 10,
        max_age_ms: 60_000,
    };
    let event = |n: usize| NewEvent {
        uid,
        kind: "unread".into(),
        data: format!("{{\"n\":{n}}}"),
    };
    assert_eq!(
        live.append_events(&[event(0)], bounds)
            .await
            .expect("append"),
        Vec::<i64>::new(),
        "an account that opened no log keeps none"
    );
    assert_eq!(
        live.keep_event_logs(&[uid], bounds).await.expect("keep"),
        vec![false]
    );
    let opened = live.open_event_log(uid, bounds).await.expect("open");
    assert_eq!(
        live.open_event_log(uid, bounds).await.expect("open again"),
        opened,
        "opening an open log adds nothing"
    );
    assert_eq!(
        live.keep_event_logs(&[uid], bounds).await.expect("keep"),
        vec![true]
    );
    // The accounts with logs, paged through (the store may hold others'),
    // name it and not an account without one.
    let never = -uid;
    assert_eq!(
        live.keep_event_logs(&[never], bounds).await.expect("keep"),
        vec![false],
        "keeping makes no log"
    );
    assert!(live.logged_account_count().await.expect("count") >= 1);
    let (mut listed, mut cursor) = (Vec::new(), 0);
    loop {
        let (page, next) = live.logged_accounts(cursor, 2).await.expect("page");
        listed.extend(page);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    assert!(listed.contains(&uid), "{uid} has a log: {listed:?}");
    assert!(!listed.contains(&never), "{never} has none");
    assert_eq!(
        live.append_events(&[event(1), event(2)], bounds)
            .await
            .expect("append"),
        vec![uid]
    );
    let LogRead::After(after) = live.events_after(uid, opened, 100).await.expect("after") else {
        panic!("the opening id is in the log");
    };
    let data: Vec<&str> = after.iter().map(|e| e.data.as_str()).collect();
    assert_eq!(data, ["{\"n\":1}", "{\"n\":2}"]);
    assert!(opened < after[0].id && after[0].id < after[1].id);
    let LogRead::After(rest) = live
        .events_after(uid, after[0].id, 100)
        .await
        .expect("after")
    else {
        panic!("a held id resumes");
    };
    assert_eq!(rest, after[1..].to_vec(), "only what came after");
    assert_eq!(
        live.events_after(uid, after[1].id, 100)
            .await
            .expect("after"),
        LogRead::After(Vec::new()),
        "nothing after the newest"
    );
    let made_up = EventId {
        ms: after[1].id.ms + 3_600_000,
        seq: 0,
    };
    assert_eq!(
        live.events_after(uid, made_up, 100).await.expect("after"),
        LogRead::Gone
    );
    // Five more, still within the bound (eight entries of ten): a read
    // from a held id takes at most what it asks for, the oldest first.
    let five: Vec<NewEvent> = (3..8).map(event).collect();
    live.append_events(&five, bounds).await.expect("append");
    let LogRead::After(page) = live.events_after(uid, after[1].id, 3).await.expect("after") else {
        panic!("a held id resumes");
    };
    let data: Vec<&str> = page.iter().map(|e| e.data.as_str()).collect();
    assert_eq!(
        data,
        ["{\"n\":3}", "{\"n\":4}", "{\"n\":5}"],
        "a read takes at most what it asks for, from the oldest after the id"
    );
    // Far past the bound (Redis trims `~`, a node of entries at a time):
    // the opening id falls out, and says so.
    let many: Vec<NewEvent> = (8..300).map(event).collect();
    live.append_events(&many, bounds).await.expect("append");
    assert_eq!(
        live.events_after(uid, opened, 100).await.expect("after"),
        LogRead::Gone
    );
}

/// Stream tickets are taken once; the register closes the oldest streams
/// past the bound and forgets stale ones. `uid` must be fresh.
pub async fn stream_tickets_and_registers(live: &dyn LiveStore, uid: i64) {
    let ticket = format!("ticket-{uid}");
    assert!(live
        .put_stream_ticket(uid, &ticket, "v", 60_000)
        .await
        .expect("put"));
    assert_eq!(
        live.take_stream_ticket(&ticket)
            .await
            .expect("take")
            .as_deref(),
        Some("v")
    );
    assert_eq!(
        live.take_stream_ticket(&ticket).await.expect("take"),
        None,
        "used once"
    );
    for stream in 1..=3 {
        let closed = live
            .register_stream(uid, stream, 100, 0, 3)
            .await
            .expect("register");
        assert!(closed.is_empty());
    }
    assert!(live.stream_registered(uid, 2).await.expect("registered"));
    assert_eq!(
        live.register_stream(uid, 4, 100, 0, 3)
            .await
            .expect("register"),
        vec![1]
    );
    assert!(!live.stream_registered(uid, 1).await.expect("registered"));
    // 2 is renewed, 3 and 4 are not: stale by 150.
    live.renew_streams(&[(uid, 2)], 200).await.expect("renew");
    assert!(live
        .register_stream(uid, 5, 200, 150, 3)
        .await
        .expect("register")
        .is_empty());
    assert_eq!(
        live.register_stream(uid, 6, 200, 150, 2)
            .await
            .expect("register"),
        vec![2]
    );
    live.unregister_stream(uid, 5).await.expect("unregister");
    assert!(!live.stream_registered(uid, 5).await.expect("registered"));
    assert!(live.stream_registered(uid, 6).await.expect("registered"));
}
