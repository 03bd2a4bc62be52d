//! `PostDocs` on redb.

use super::*;
use crate::store::{PostDocs, PostModeration, PostPresence};

#[async_trait]
impl PostDocs for EmbeddedDocs {
    async fn insert_post(&self, post: &PostDoc) -> StoreResult<()> {
        let post = post.clone();
        self.write(move |txn| {
            let mut posts = txn.open_table(POSTS).map_err(other)?;
            if posts.get(id(post.id)).map_err(other)?.is_some() {
                return Err(StoreError::IdTaken);
            }
            posts
                .insert(id(post.id), encode(&post)?.as_slice())
                .map_err(other)?;
            if !post.deleted {
                txn.open_table(POSTS_BY_AUTHOR)
                    .map_err(other)?
                    .insert((id(post.author_uid), id(post.id)), ())
                    .map_err(other)?;
            }
            Ok(())
        })
        .await
    }

    async fn posts_after(&self, after: Option<i64>, limit: usize) -> StoreResult<Vec<PostDoc>> {
        self.read(move |txn| posts_after_as(txn, after, limit))
            .await
    }

    async fn post_presence_after(
        &self,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<PostPresence>> {
        // The same records, decoded into two fields: the text and the
        // arrays are passed over, not copied.
        self.read(move |txn| posts_after_as(txn, after, limit))
            .await
    }

    async fn posts_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<PostDoc>> {
        let ids = ids.to_vec();
        let cap = self.array_cap;
        self.read(move |txn| {
            docs_by_ids(txn, POSTS, &ids)?
                .into_iter()
                .map(|p| with_arrays(txn, p, cap))
                .collect()
        })
        .await
    }

    async fn set_post_moderation(
        &self,
        post_id: i64,
        moderation: Option<PostModeration>,
    ) -> StoreResult<Option<PostDoc>> {
        self.write(move |txn| {
            let mut posts = txn.open_table(POSTS).map_err(other)?;
            let Some(mut post) = get_doc::<PostDoc>(&posts, id(post_id))? else {
                return Ok(None);
            };
            if post.deleted {
                return Ok(None);
            }
            post.moderation = moderation;
            posts
                .insert(id(post_id), encode(&post)?.as_slice())
                .map_err(other)?;
            Ok(Some(post))
        })
        .await
    }

    async fn delete_post(&self, post_id: i64) -> StoreResult<bool> {
        self.write(move |txn| {
            let mut posts = txn.open_table(POSTS).map_err(other)?;
            let Some(mut post) = get_doc::<PostDoc>(&posts, id(post_id))? else {
                return Ok(false);
            };
            if post.deleted {
                return Ok(false);
            }
            post.deleted = true;
            posts
                .insert(id(post_id), encode(&post)?.as_slice())
                .map_err(other)?;
            txn.open_table(POSTS_BY_AUTHOR)
                .map_err(other)?
                .remove((id(post.author_uid), id(post_id)))
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    async fn post_ids_by_author(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>> {
        self.read(move |txn| {
            let table = txn.open_table(POSTS_BY_AUTHOR).map_err(other)?;
            Ok(newest_below(&table, id(uid), before, limit)?
                .into_iter()
                .map(|p| p as i64)
                .collect())
        })
        .await
    }

    async fn post_ids_by_authors(
        &self,
        authors: &[i64],
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<i64>> {
        let authors = authors.to_vec();
        self.read(move |txn| {
            let table = txn.open_table(POSTS_BY_AUTHOR).map_err(other)?;
            let mut all = Vec::new();
            for a in authors {
                all.extend(newest_below(&table, id(a), before, limit)?);
            }
            all.sort_unstable_by(|x, y| y.cmp(x));
            all.truncate(limit);
            Ok(all.into_iter().map(|p| p as i64).collect())
        })
        .await
    }
}

/// Posts above `after` in id order, at most `limit`, each decoded as `T`.
fn posts_after_as<T: serde::de::DeserializeOwned>(
    txn: &redb::ReadTransaction,
    after: Option<i64>,
    limit: usize,
) -> StoreResult<Vec<T>> {
    let table = txn.open_table(POSTS).map_err(other)?;
    let low = after.map_or(0, |a| id(a).saturating_add(1));
    let mut out = Vec::new();
    for entry in table.range(low..).map_err(other)? {
        if out.len() >= limit {
            break;
        }
        out.push(decode(entry.map_err(other)?.1.value())?);
    }
    Ok(out)
}
