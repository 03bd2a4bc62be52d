//! `AccountDocs` on MongoDB: accounts and their sessions.

use super::*;
use crate::domain::search_text::{name_key, prefix_end, NAME_KEY_VERSION};
use crate::store::{AccountDocs, NameKey, ProfileChange};

#[async_trait]
impl AccountDocs for MongoDocs {
    async fn insert_user(&self, user: &UserDoc) -> StoreResult<()> {
        let mut d = mongodb::bson::to_document(user).map_err(|e| StoreError::Other(e.into()))?;
        // Counted from the start; see `count_follow`.
        d.insert("followersCount", 0_i64);
        d.insert("followingCount", 0_i64);
        d.insert("nickKey", name_key(&user.nick_name));
        d.insert("nickKeyVersion", i64::from(NAME_KEY_VERSION));
        insert_new(&self.db.collection::<Document>("users"), &d, "username").await
    }

    async fn user_by_username(&self, username: &str) -> StoreResult<Option<UserDoc>> {
        self.users()
            .find_one(doc! { "username": username })
            .await
            .map_err(classify)
    }

    async fn users_by_ids(&self, uids: &[i64]) -> StoreResult<Vec<UserDoc>> {
        by_ids(self.users(), uids).await
    }

    async fn users_by_usernames(&self, usernames: &[String]) -> StoreResult<Vec<UserDoc>> {
        if usernames.is_empty() {
            return Ok(Vec::new());
        }
        collect(
            self.users()
                .find(doc! { "username": { "$in": usernames } })
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn users_by_name_prefix(
        &self,
        by: NameKey,
        prefix: &str,
        after: Option<(String, i64)>,
        limit: usize,
    ) -> StoreResult<Vec<UserDoc>> {
        let field = match by {
            NameKey::Username => "username",
            NameKey::NickName => "nickKey",
        };
        let below = |lower: Document| match prefix_end(prefix) {
            Some(end) => {
                let mut range = lower;
                range.insert("$lt", end);
                range
            }
            None => lower,
        };
        // Each branch a range of the index: a page starts at its cursor,
        // not at the prefix.
        let filter = match after {
            Some((name, uid)) if name.as_str() >= prefix => {
                let mut branches = vec![doc! { field: below(doc! { "$gt": &name }) }];
                if name.starts_with(prefix) {
                    branches.push(doc! { field: &name, "_id": { "$gt": uid } });
                }
                doc! { "$or": branches }
            }
            _ => doc! { field: below(doc! { "$gte": prefix }) },
        };
        // Usernames are unique: their order alone is the whole order.
        let sort = match by {
            NameKey::Username => doc! { field: 1 },
            NameKey::NickName => doc! { field: 1, "_id": 1 },
        };
        collect(
            self.users()
                .find(filter)
                .sort(sort)
                .limit(limit as i64)
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn update_profile(
        &self,
        uid: i64,
        change: ProfileChange<'_>,
    ) -> StoreResult<Option<UserDoc>> {
        let mut set = Document::new();
        if let Some(n) = change.nick_name {
            set.insert("nickName", n);
            set.insert("nickKey", name_key(n));
            set.insert("nickKeyVersion", i64::from(NAME_KEY_VERSION));
        }
        if let Some(f) = change.findable {
            set.insert("findable", f);
        }
        if let Some(h) = change.head_img {
            set.insert("headImg", h);
        }
        if let Some(w) = change.album_window {
            let text = mongodb::bson::to_bson(&w).map_err(|e| StoreError::Other(e.into()))?;
            set.insert("albumWindow", text);
        }
        if !set.is_empty() {
            self.users()
                .update_one(doc! { "_id": uid }, doc! { "$set": set })
                .await
                .map_err(classify)?;
        }
        self.users()
            .find_one(doc! { "_id": uid })
            .await
            .map_err(classify)
    }

    async fn set_roles(&self, uid: i64, roles: &[String]) -> StoreResult<bool> {
        let r = self
            .users()
            .update_one(doc! { "_id": uid }, doc! { "$set": { "roles": roles } })
            .await
            .map_err(classify)?;
        Ok(r.matched_count == 1)
    }

    async fn set_suspension(&self, uid: i64, until: i64) -> StoreResult<bool> {
        let change = if until == 0 {
            doc! { "$unset": { "suspendedUntil": "" } }
        } else {
            doc! { "$set": { "suspendedUntil": until } }
        };
        let r = self
            .users()
            .update_one(doc! { "_id": uid }, change)
            .await
            .map_err(classify)?;
        Ok(r.matched_count == 1)
    }

    async fn extend_suspension(&self, uid: i64, until: i64) -> StoreResult<()> {
        // Conditional on the stored end being earlier (or absent), so the
        // write itself decides between two at once.
        self.users()
            .update_one(
                doc! { "_id": uid, "$or": [
                    { "suspendedUntil": { "$exists": false } },
                    { "suspendedUntil": { "$lt": until } },
                ] },
                doc! { "$set": { "suspendedUntil": until } },
            )
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn staff(&self, limit: usize) -> StoreResult<Vec<i64>> {
        let cursor = self
            .db
            .collection::<IdOnly>("users")
            .find(doc! { "roles": { "$in": ["moderator", "admin"] } })
            .projection(doc! { "_id": 1 })
            .limit(limit as i64)
            .await
            .map_err(classify)?;
        Ok(collect(cursor).await?.into_iter().map(|d| d.id).collect())
    }

    async fn set_password_hash(
        &self,
        uid: i64,
        password_hash: &str,
        checked_gen: i64,
        credential_gen: i64,
    ) -> StoreResult<bool> {
        // FerretDB does not apply a conditional update atomically, so the
        // race between changes checked under one generation is decided by a
        // claim of that generation (`claims.rs`); the filter still keeps
        // the generation, so a sign-out everywhere or an erasure in between
        // wins on MongoDB.
        let claim = format!("password:{uid}:{checked_gen}");
        // Rivals hold their read for a password hash's time; a claim left
        // by a request dropped in between refuses this state for a minute.
        if !self
            .claim_kept(claim.clone(), crate::ids::now_ms(), 60_000)
            .await?
        {
            return Ok(false);
        }
        let change =
            doc! { "$set": { "passwordHash": password_hash, "credentialGen": credential_gen } };
        // Plain equalities only: nx-27017 loses the `_id` condition of an
        // `$or` beside it. An account from before `credentialGen` has none,
        // which reads as 0 (and `null` matches a missing field on MongoDB).
        let mut filters = vec![doc! { "_id": uid, "credentialGen": checked_gen }];
        if checked_gen == 0 {
            filters.push(doc! { "_id": uid, "credentialGen": mongodb::bson::Bson::Null });
        }
        for filter in filters {
            match self.users().update_one(filter, change.clone()).await {
                Ok(r) if r.matched_count == 1 => return Ok(true),
                Ok(_) => {}
                Err(e) => {
                    // Given back, or every retry of this change would be
                    // refused for the claim's hour.
                    self.unclaim(claim).await;
                    return Err(classify(e));
                }
            }
        }
        self.unclaim(claim).await;
        Ok(false)
    }

    async fn raise_credential_gen(&self, uid: i64, credential_gen: i64) -> StoreResult<()> {
        self.users()
            .update_one(
                doc! { "_id": uid },
                doc! { "$max": { "credentialGen": credential_gen } },
            )
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn set_session_credential_gen(
        &self,
        uid: i64,
        session_id: i64,
        credential_gen: i64,
    ) -> StoreResult<()> {
        self.sessions()
            .update_one(
                doc! { "_id": session_id, "uid": uid },
                doc! { "$set": { "credentialGen": credential_gen } },
            )
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn insert_session(&self, session: &SessionDoc) -> StoreResult<()> {
        let mut d = mongodb::bson::to_document(session).map_err(|e| StoreError::Other(e.into()))?;
        // The TTL index that purges expired sessions reads a BSON date.
        d.insert(
            "expireAt",
            mongodb::bson::DateTime::from_millis(session.expires_at),
        );
        insert_new(&self.db.collection::<Document>("sessions"), &d, "session").await
    }

    async fn session_by_token_hash(
        &self,
        uid: i64,
        token_hash: &str,
    ) -> StoreResult<Option<SessionDoc>> {
        self.sessions()
            .find_one(doc! { "uid": uid, "tokenHash": token_hash })
            .await
            .map_err(classify)
    }

    async fn sessions_of_user(&self, uid: i64, limit: usize) -> StoreResult<Vec<SessionDoc>> {
        newest_page(self.sessions(), doc! { "uid": uid }, None, limit).await
    }

    async fn delete_sessions(&self, uid: i64, ids: &[i64]) -> StoreResult<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        // By `_id` (TESTING.md); `uid` too, so nobody deletes another's.
        let r = self
            .sessions()
            .delete_many(doc! { "_id": { "$in": ids }, "uid": uid })
            .await
            .map_err(classify)?;
        Ok(r.deleted_count)
    }

    async fn touch_session(&self, uid: i64, id: i64, at: i64) -> StoreResult<()> {
        self.sessions()
            .update_one(
                doc! { "_id": id, "uid": uid },
                doc! { "$set": { "lastSeenAt": at } },
            )
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn purge_expired_sessions(&self, now: i64, limit: usize) -> StoreResult<u64> {
        self.delete_some::<i64>("sessions", doc! { "expiresAt": { "$lt": now } }, limit)
            .await
    }

    async fn touch_user(&self, uid: i64, at: i64) -> StoreResult<()> {
        self.users()
            .update_one(doc! { "_id": uid }, doc! { "$set": { "lastActiveAt": at } })
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn erase_user(&self, uid: i64) -> StoreResult<bool> {
        let r = self
            .users()
            .update_one(
                doc! { "_id": uid },
                doc! { "$set": {
                    "username": UserDoc::erased_username(uid),
                    "nickName": "",
                    "nickKey": "",
                    "nickKeyVersion": i64::from(NAME_KEY_VERSION),
                    "headImg": "",
                    "passwordHash": "",
                    "roles": [],
                    "erasing": true,
                    // A change of credentials checked before the erasure
                    // loses its compare-and-set (`set_password_hash`).
                    "credentialGen": crate::ids::next_id(),
                } },
            )
            .await
            .map_err(classify)?;
        Ok(r.matched_count == 1)
    }

    async fn accounts_being_erased(&self, limit: usize) -> StoreResult<Vec<i64>> {
        let cursor = self
            .db
            .collection::<IdOnly>("users")
            .find(doc! { "erasing": true })
            .projection(doc! { "_id": 1 })
            .limit(limit as i64)
            .await
            .map_err(classify)?;
        Ok(collect(cursor).await?.into_iter().map(|d| d.id).collect())
    }

    async fn erasure_done(&self, uid: i64) -> StoreResult<()> {
        self.users()
            .update_one(doc! { "_id": uid }, doc! { "$unset": { "erasing": "" } })
            .await
            .map(|_| ())
            .map_err(classify)
    }
}
