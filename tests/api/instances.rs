//! Instance ids: leased so that instances on one store never mint the same
//! ids, and taken over only once a lease has ended.

use crate::helpers::spawn_app;
use moments::ids::{now_ms, MAX_INSTANCE};

#[tokio::test]
async fn instance_ids_are_leased_one_holder_at_a_time() {
    let app = spawn_app().await;
    let docs = &app.ctx.docs;
    let now = now_ms();
    // The app took one at start-up; every other one can be leased once.
    let mut held: Vec<(u16, String)> = Vec::new();
    for i in 0..MAX_INSTANCE {
        let holder = format!("holder-{i}");
        let id = docs
            .lease_instance_id(&holder, now, now + 60_000)
            .await
            .unwrap()
            .expect("a free instance id");
        held.push((id, holder));
    }
    let mut ids: Vec<u16> = held.iter().map(|(id, _)| *id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), usize::from(MAX_INSTANCE), "no id leased twice");
    // All held: none is handed out.
    let none = docs.lease_instance_id("latecomer", now, now + 60_000).await;
    assert_eq!(none.unwrap(), None);
    // Only the holder renews.
    let (first, holder) = &held[0];
    assert!(docs
        .renew_instance_id(*first, holder, now + 90_000)
        .await
        .unwrap());
    assert!(!docs
        .renew_instance_id(*first, "an-impostor", now + 90_000)
        .await
        .unwrap());
    // Once leases end (asked about a time after them all), one can be taken,
    // and then it is the new holder's.
    let later = now + 120_000;
    let taken = docs
        .lease_instance_id("latecomer", later, later + 60_000)
        .await
        .unwrap()
        .expect("an ended lease is free");
    assert!(docs
        .renew_instance_id(taken, "latecomer", later + 90_000)
        .await
        .unwrap());
    let old_holder = held
        .iter()
        .find(|(id, _)| *id == taken)
        .map(|(_, h)| h.clone());
    if let Some(h) = old_holder {
        assert!(!docs
            .renew_instance_id(taken, &h, later + 90_000)
            .await
            .unwrap());
    }
}
