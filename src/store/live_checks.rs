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
