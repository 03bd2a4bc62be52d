//! `ShareDocs` on redb: shares by post, with the indexes that keep one per
//! user, post and platform and find a user's.

use super::*;
use crate::domain::share::SharePlatform;
use crate::store::{ShareDoc, ShareDocs};

fn platform_code(p: SharePlatform) -> u8 {
    match p {
        SharePlatform::Wechat => 1,
        SharePlatform::Moments => 2,
        SharePlatform::Weibo => 3,
        SharePlatform::Qq => 4,
        SharePlatform::Link => 5,
    }
}

#[async_trait]
impl ShareDocs for EmbeddedDocs {
    async fn insert_share(&self, share: &ShareDoc) -> StoreResult<bool> {
        let s = share.clone();
        self.write(move |txn| {
            let key = (id(s.uid), id(s.post_id), platform_code(s.platform));
            let mut of = txn.open_table(SHARE_OF).map_err(other)?;
            if of.get(key).map_err(other)?.is_some() {
                return Ok(false);
            }
            let mut shares = txn.open_table(SHARES).map_err(other)?;
            if shares.get(id(s.id)).map_err(other)?.is_some() {
                return Err(StoreError::IdTaken);
            }
            of.insert(key, id(s.id)).map_err(other)?;
            shares
                .insert(id(s.id), encode(&s)?.as_slice())
                .map_err(other)?;
            txn.open_table(SHARES_BY_POST)
                .map_err(other)?
                .insert((id(s.post_id), id(s.id)), ())
                .map_err(other)?;
            txn.open_table(SHARES_BY_USER)
                .map_err(other)?
                .insert((id(s.uid), id(s.id)), ())
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    async fn share_ids_of_posts(&self, post_ids: &[i64]) -> StoreResult<Vec<(i64, i64)>> {
        let posts = post_ids.to_vec();
        self.read(move |txn| {
            let by_post = txn.open_table(SHARES_BY_POST).map_err(other)?;
            let mut out = Vec::new();
            for p in posts {
                for s in all_under(&by_post, id(p))? {
                    out.push((p, s as i64));
                }
            }
            Ok(out)
        })
        .await
    }

    async fn shares_by_user(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ShareDoc>> {
        self.read(move |txn| {
            let by_user = txn.open_table(SHARES_BY_USER).map_err(other)?;
            let ids: Vec<i64> = newest_below(&by_user, id(uid), before, limit)?
                .into_iter()
                .map(|i| i as i64)
                .collect();
            docs_by_ids(txn, SHARES, &ids)
        })
        .await
    }

    async fn delete_share(&self, share: &ShareDoc) -> StoreResult<bool> {
        let s = share.clone();
        self.write(move |txn| {
            let removed = txn
                .open_table(SHARES)
                .map_err(other)?
                .remove(id(s.id))
                .map_err(other)?
                .is_some();
            if !removed {
                return Ok(false);
            }
            txn.open_table(SHARE_OF)
                .map_err(other)?
                .remove((id(s.uid), id(s.post_id), platform_code(s.platform)))
                .map_err(other)?;
            txn.open_table(SHARES_BY_POST)
                .map_err(other)?
                .remove((id(s.post_id), id(s.id)))
                .map_err(other)?;
            txn.open_table(SHARES_BY_USER)
                .map_err(other)?
                .remove((id(s.uid), id(s.id)))
                .map_err(other)?;
            Ok(true)
        })
        .await
    }
}
