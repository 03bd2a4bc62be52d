//! Full pages from filtered keyset sources. Visibility is decided per viewer
//! at read time (a block or an unfriending changes it after the fact), so a
//! page of the first N items could show none of them. `fill_page` reads on
//! in growing batches until the page is full or the source ends: a page is
//! short only at the end, or when a bounded number of rounds found too
//! little (then its cursor goes on from where the reading stopped).

use std::future::Future;

use crate::domain::cursor::Cursor;
use crate::error::AppResult;

/// Batches read per page at most. With the first batch `limit + 1` and each
/// next one twice the last, four rounds look at about 15 × `limit` items.
const MAX_ROUNDS: usize = 4;
/// Items read in one batch at most.
const MAX_BATCH: usize = 400;

/// What `keep` made of a batch: at most `room` items, in order; how many of
/// the batch it took to find them (all of it when fewer were kept); and
/// whether any item after those would have been kept too.
pub struct Kept<U> {
    pub items: Vec<U>,
    pub looked_at: usize,
    pub more: bool,
}

/// Up to `limit` kept items below `before`, and the cursor of the next page.
///
/// - `read(before, n)`: up to `n` items below `before`, newest first; fewer
///   than `n` means the source ends there.
/// - `keep(batch, room)`: what of the batch is kept (`Kept`).
pub async fn fill_page<T, U, R, RF, K, KF>(
    limit: usize,
    before: Option<i64>,
    read: R,
    keep: K,
    id_of: impl Fn(&T) -> i64,
) -> AppResult<(Vec<U>, Option<String>)>
where
    R: FnMut(Option<i64>, usize) -> RF,
    RF: Future<Output = AppResult<Vec<T>>>,
    K: FnMut(Vec<T>, usize) -> KF,
    KF: Future<Output = AppResult<Kept<U>>>,
{
    fill_page_by(limit, before, read, keep, id_of, Cursor::encode).await
}

/// `fill_page` for any keyset key (the hot comment order's is a pair),
/// written into the next cursor by `encode`.
pub async fn fill_page_by<T, U, Key, R, RF, K, KF>(
    limit: usize,
    before: Option<Key>,
    mut read: R,
    mut keep: K,
    id_of: impl Fn(&T) -> Key,
    encode: impl Fn(Key) -> String,
) -> AppResult<(Vec<U>, Option<String>)>
where
    Key: Copy,
    R: FnMut(Option<Key>, usize) -> RF,
    RF: Future<Output = AppResult<Vec<T>>>,
    K: FnMut(Vec<T>, usize) -> KF,
    KF: Future<Output = AppResult<Kept<U>>>,
{
    let mut out = Vec::new();
    let mut before = before;
    let mut batch = limit + 1;
    for _ in 0..MAX_ROUNDS {
        let items = read(before, batch).await?;
        let n = items.len();
        let ends = n < batch;
        let ids: Vec<Key> = items.iter().map(&id_of).collect();
        let kept = keep(items, limit - out.len()).await?;
        out.extend(kept.items);
        if let Some(last) = kept.looked_at.checked_sub(1).and_then(|i| ids.get(i)) {
            before = Some(*last);
        }
        if out.len() >= limit {
            let more = kept.more || !ends;
            return Ok((out, before.filter(|_| more).map(&encode)));
        }
        if ends {
            return Ok((out, None));
        }
        batch = (batch * 2).min(MAX_BATCH);
    }
    Ok((out, before.map(&encode)))
}

/// `keep` for a plain filter: the first `room` items that pass.
pub fn keep_where<T>(items: Vec<T>, room: usize, pass: impl Fn(&T) -> bool) -> Kept<T> {
    let mut kept = Vec::new();
    let mut looked_at = 0;
    let mut more = false;
    for item in items {
        if kept.len() == room {
            if pass(&item) {
                more = true;
                break;
            }
            continue;
        }
        looked_at += 1;
        if pass(&item) {
            kept.push(item);
        }
    }
    Kept {
        items: kept,
        looked_at,
        more,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids 1..=n, newest first, of which `visible` pass.
    async fn page_of(
        n: i64,
        visible: impl Fn(i64) -> bool + Copy,
        limit: usize,
        before: Option<i64>,
    ) -> (Vec<i64>, Option<i64>, usize) {
        let reads = std::cell::Cell::new(0);
        let (items, next) = fill_page(
            limit,
            before,
            |b, want| {
                reads.set(reads.get() + 1);
                let top = b.unwrap_or(n + 1);
                let items: Vec<i64> = (1..top).rev().take(want).collect();
                async move { Ok(items) }
            },
            |batch, room| async move { Ok(keep_where(batch, room, |i| visible(*i))) },
            |i| *i,
        )
        .await
        .unwrap();
        let next = next.map(|c| Cursor::parse(&c).unwrap().0);
        (items, next, reads.get())
    }

    #[tokio::test]
    async fn a_page_reads_on_past_hidden_items() {
        // The feed: 25 hidden, 1 visible, 25 hidden.
        let (items, next, reads) = page_of(51, |i| i == 26, 20, None).await;
        assert_eq!((items, next), (vec![26], None));
        assert!(reads <= 3, "{reads} reads");
    }

    #[tokio::test]
    async fn a_full_page_goes_on_after_its_last_item() {
        let (items, next, _) = page_of(100, |i| i % 3 == 0, 5, None).await;
        assert_eq!(items, vec![99, 96, 93, 90, 87]);
        assert_eq!(next, Some(87));
        let (items, next, _) = page_of(100, |i| i % 3 == 0, 5, Some(87)).await;
        assert_eq!(items, vec![84, 81, 78, 75, 72]);
        assert_eq!(next, Some(72));
        // The last page has no cursor, also when it is exactly full.
        let (items, next, _) = page_of(6, |i| i % 3 == 0, 2, None).await;
        assert_eq!((items, next), (vec![6, 3], None));
        let (items, next, _) = page_of(0, |_| true, 20, None).await;
        assert_eq!((items, next), (vec![], None));
    }

    #[tokio::test]
    async fn the_reading_is_bounded_and_resumes_where_it_stopped() {
        // Nothing visible among 100,000: four reads, then a cursor.
        let (items, next, reads) = page_of(100_000, |i| i == 1, 20, None).await;
        assert!(items.is_empty());
        assert_eq!(reads, MAX_ROUNDS);
        let resumed = next.expect("a cursor to go on");
        assert!(resumed < 100_000 && resumed > 1);
    }
}
