//! `SocialDocs` on MongoDB: the social graph, follows, blocks, mutes and hides.

use super::*;
use crate::store::{FilterDoc, FilterKind, SocialDocs};

impl MongoDocs {
    fn filters(&self) -> Collection<FilterDoc> {
        self.db.collection("filters")
    }
}

fn kind_name(kind: FilterKind) -> &'static str {
    match kind {
        FilterKind::Mute => "mute",
        FilterKind::Hide => "hide",
    }
}

#[async_trait]
impl SocialDocs for MongoDocs {
    async fn insert_follow(&self, follow: &FollowDoc) -> StoreResult<bool> {
        let added = insert_unless_duplicate(&self.follows(), follow).await?;
        if added {
            self.count_follow(follow.follower, follow.followee, 1).await;
        }
        Ok(added)
    }

    async fn delete_follow(&self, follower: i64, followee: i64) -> StoreResult<bool> {
        let removed = self
            .delete_matching(
                "follows",
                doc! { "follower": follower, "followee": followee },
            )
            .await?;
        if removed {
            self.count_follow(follower, followee, -1).await;
        }
        Ok(removed)
    }

    async fn followers_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>> {
        self.edges_page(doc! { "followee": uid }, before, limit)
            .await
    }

    async fn following_page(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FollowDoc>> {
        self.edges_page(doc! { "follower": uid }, before, limit)
            .await
    }

    async fn follow_counts(&self, uid: i64) -> StoreResult<(u64, u64)> {
        let counted = self
            .db
            .collection::<FollowCounts>("users")
            .find_one(doc! { "_id": uid })
            .projection(doc! { "followersCount": 1, "followingCount": 1 })
            .await
            .map_err(classify)?;
        if let Some(FollowCounts {
            followers: Some(followers),
            following: Some(following),
            ..
        }) = counted
        {
            return Ok((followers.max(0) as u64, following.max(0) as u64));
        }
        self.backfill_follow_counts(uid).await
    }

    async fn recount_follows(&self, uid: i64) -> StoreResult<()> {
        self.backfill_follow_counts(uid).await.map(|_| ())
    }

    async fn follow_edges(&self, uid: i64, others: &[i64]) -> StoreResult<(Vec<i64>, Vec<i64>)> {
        if others.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let filter = doc! { "$or": [
            { "follower": uid, "followee": { "$in": others } },
            { "followee": uid, "follower": { "$in": others } },
        ] };
        let edges = collect(self.follows().find(filter).await.map_err(classify)?).await?;
        let mut out = (Vec::new(), Vec::new());
        for e in edges {
            if e.follower == uid {
                out.0.push(e.followee);
            }
            if e.followee == uid {
                out.1.push(e.follower);
            }
        }
        Ok(out)
    }

    async fn followers_among(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>> {
        if others.is_empty() {
            return Ok(Vec::new());
        }
        let filter = doc! { "followee": uid, "follower": { "$in": others } };
        let edges = collect(self.follows().find(filter).await.map_err(classify)?).await?;
        Ok(edges.into_iter().map(|e| e.follower).collect())
    }

    async fn insert_block(&self, block: &BlockDoc) -> StoreResult<bool> {
        insert_unless_duplicate(&self.blocks(), block).await
    }

    async fn delete_block(&self, blocker: i64, blocked: i64) -> StoreResult<bool> {
        self.delete_matching("blocks", doc! { "blocker": blocker, "blocked": blocked })
            .await
    }

    async fn blocks_between(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>> {
        if others.is_empty() {
            return Ok(Vec::new());
        }
        let filter = doc! { "$or": [
            { "blocker": uid, "blocked": { "$in": others } },
            { "blocked": uid, "blocker": { "$in": others } },
        ] };
        let edges = collect(self.blocks().find(filter).await.map_err(classify)?).await?;
        let mut out: Vec<i64> = edges
            .into_iter()
            .map(|b| {
                if b.blocker == uid {
                    b.blocked
                } else {
                    b.blocker
                }
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    async fn active_followers(
        &self,
        uid: i64,
        since: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<(Vec<i64>, Option<i64>)> {
        let edges = self
            .edges_page(doc! { "followee": uid }, before, limit)
            .await?;
        let next = edges.last().map(|e| e.id).filter(|_| edges.len() == limit);
        if edges.is_empty() {
            return Ok((Vec::new(), None));
        }
        let followers: Vec<i64> = edges.iter().map(|e| e.follower).collect();
        let cursor = self
            .db
            .collection::<IdOnly>("users")
            .find(doc! { "_id": { "$in": followers }, "lastActiveAt": { "$gte": since } })
            .projection(doc! { "_id": 1 })
            .batch_size(limit.clamp(1, 10_000) as u32)
            .await
            .map_err(classify)?;
        let active = collect(cursor).await?.into_iter().map(|d| d.id).collect();
        Ok((active, next))
    }

    async fn follower_counts(&self, uids: &[i64]) -> StoreResult<Vec<(i64, u64)>> {
        // One grouped count for every author, not a count each: a feed read
        // with 200 followees would otherwise cost 200 queries.
        #[derive(Deserialize)]
        struct Count {
            #[serde(rename = "_id")]
            uid: i64,
            n: i64,
        }
        if uids.is_empty() {
            return Ok(Vec::new());
        }
        let pipeline = [
            doc! { "$match": { "followee": { "$in": uids } } },
            doc! { "$group": { "_id": "$followee", "n": { "$sum": 1 } } },
        ];
        let cursor = self
            .follows()
            .aggregate(pipeline)
            .with_type::<Count>()
            .await
            .map_err(classify)?;
        let counted: std::collections::HashMap<i64, u64> = collect(cursor)
            .await?
            .into_iter()
            .map(|c| (c.uid, c.n.max(0) as u64))
            .collect();
        Ok(uids
            .iter()
            .map(|u| (*u, counted.get(u).copied().unwrap_or(0)))
            .collect())
    }

    async fn follows_from(&self, uids: &[i64]) -> StoreResult<Vec<FollowDoc>> {
        if uids.is_empty() {
            return Ok(Vec::new());
        }
        collect(
            self.follows()
                .find(doc! { "follower": { "$in": uids } })
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn blocks_by(&self, blockers: &[i64]) -> StoreResult<Vec<BlockDoc>> {
        if blockers.is_empty() {
            return Ok(Vec::new());
        }
        let filter = doc! { "blocker": { "$in": blockers } };
        collect(self.blocks().find(filter).await.map_err(classify)?).await
    }

    async fn blockers_of(&self, uid: i64, limit: usize) -> StoreResult<Vec<BlockDoc>> {
        let cursor = self
            .blocks()
            .find(doc! { "blocked": uid })
            .limit(limit as i64)
            .await
            .map_err(classify)?;
        collect(cursor).await
    }

    async fn blockers_among(&self, uid: i64, others: &[i64]) -> StoreResult<Vec<i64>> {
        if others.is_empty() {
            return Ok(Vec::new());
        }
        let filter = doc! { "blocker": { "$in": others }, "blocked": uid };
        let edges = collect(self.blocks().find(filter).await.map_err(classify)?).await?;
        Ok(edges.into_iter().map(|b| b.blocker).collect())
    }

    async fn blocks_involving(&self, uid: i64, limit: usize) -> StoreResult<Vec<BlockDoc>> {
        let filter = doc! { "$or": [ { "blocker": uid }, { "blocked": uid } ] };
        let cursor = self
            .blocks()
            .find(filter)
            .limit(limit as i64)
            .await
            .map_err(classify)?;
        collect(cursor).await
    }

    async fn insert_filter(&self, filter: &FilterDoc) -> StoreResult<bool> {
        insert_unless_duplicate(&self.filters(), filter).await
    }

    async fn delete_filter(&self, kind: FilterKind, uid: i64, other: i64) -> StoreResult<bool> {
        self.delete_matching(
            "filters",
            doc! { "uid": uid, "kind": kind_name(kind), "other": other },
        )
        .await
    }

    async fn filters_page(
        &self,
        kind: FilterKind,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<FilterDoc>> {
        newest_page(
            self.filters(),
            doc! { "uid": uid, "kind": kind_name(kind) },
            before,
            limit,
        )
        .await
    }

    async fn filters_set_by(&self, kind: FilterKind, uids: &[i64]) -> StoreResult<Vec<FilterDoc>> {
        if uids.is_empty() {
            return Ok(Vec::new());
        }
        let filter = doc! { "uid": { "$in": uids }, "kind": kind_name(kind) };
        collect(self.filters().find(filter).await.map_err(classify)?).await
    }

    async fn filters_on_from(
        &self,
        kind: FilterKind,
        on: i64,
        setters: &[i64],
    ) -> StoreResult<Vec<FilterDoc>> {
        if setters.is_empty() {
            return Ok(Vec::new());
        }
        let filter = doc! { "uid": { "$in": setters }, "kind": kind_name(kind), "other": on };
        collect(self.filters().find(filter).await.map_err(classify)?).await
    }

    async fn delete_filters_involving(&self, uid: i64, limit: usize) -> StoreResult<u64> {
        self.delete_some::<i64>(
            "filters",
            doc! { "$or": [ { "uid": uid }, { "other": uid } ] },
            limit,
        )
        .await
    }
}
