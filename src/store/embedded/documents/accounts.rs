//! `AccountDocs` on redb: accounts and their sessions.

use super::*;
use crate::domain::search_text::name_key;
use crate::store::{AccountDocs, NameKey, ProfileChange};

#[async_trait]
impl AccountDocs for EmbeddedDocs {
    async fn insert_user(&self, user: &UserDoc) -> StoreResult<()> {
        let user = user.clone();
        self.write(move |txn| {
            let mut names = txn.open_table(USERNAMES).map_err(other)?;
            if names.get(user.username.as_str()).map_err(other)?.is_some() {
                return Err(StoreError::Duplicate("username"));
            }
            if txn
                .open_table(USERS)
                .map_err(other)?
                .get(id(user.uid))
                .map_err(other)?
                .is_some()
            {
                return Err(StoreError::IdTaken);
            }
            names
                .insert(user.username.as_str(), id(user.uid))
                .map_err(other)?;
            txn.open_table(USERS_BY_NICK_KEY)
                .map_err(other)?
                .insert((name_key(&user.nick_name).as_str(), id(user.uid)), ())
                .map_err(other)?;
            let mut users = txn.open_table(USERS).map_err(other)?;
            users
                .insert(id(user.uid), encode(&user)?.as_slice())
                .map_err(other)?;
            if !user.roles.is_empty() {
                txn.open_table(STAFF)
                    .map_err(other)?
                    .insert(id(user.uid), ())
                    .map_err(other)?;
            }
            txn.open_table(LAST_ACTIVE)
                .map_err(other)?
                .insert(id(user.uid), user.last_active_at)
                .map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn user_by_username(&self, username: &str) -> StoreResult<Option<UserDoc>> {
        let username = username.to_string();
        self.read(move |txn| {
            let names = txn.open_table(USERNAMES).map_err(other)?;
            let Some(uid) = names
                .get(username.as_str())
                .map_err(other)?
                .map(|v| v.value())
            else {
                return Ok(None);
            };
            get_doc(&txn.open_table(USERS).map_err(other)?, uid)
        })
        .await
    }

    async fn users_by_ids(&self, uids: &[i64]) -> StoreResult<Vec<UserDoc>> {
        let uids = uids.to_vec();
        self.read(move |txn| docs_by_ids(txn, USERS, &uids)).await
    }

    async fn users_by_usernames(&self, usernames: &[String]) -> StoreResult<Vec<UserDoc>> {
        let usernames = usernames.to_vec();
        self.read(move |txn| {
            let names = txn.open_table(USERNAMES).map_err(other)?;
            let mut uids = Vec::with_capacity(usernames.len());
            for name in &usernames {
                if let Some(uid) = names.get(name.as_str()).map_err(other)? {
                    uids.push(uid.value() as i64);
                }
            }
            docs_by_ids(txn, USERS, &uids)
        })
        .await
    }

    async fn users_by_name_prefix(
        &self,
        by: NameKey,
        prefix: &str,
        after: Option<(String, i64)>,
        limit: usize,
    ) -> StoreResult<Vec<UserDoc>> {
        let prefix = prefix.to_string();
        self.read(move |txn| {
            let from = match &after {
                Some((name, _)) if name.as_str() > prefix.as_str() => name.clone(),
                _ => prefix.clone(),
            };
            let past = |name: &str, uid: u64| match &after {
                Some((n, u)) => (name, uid as i64) > (n.as_str(), *u),
                None => true,
            };
            let mut uids = Vec::with_capacity(limit);
            match by {
                NameKey::Username => {
                    let names = txn.open_table(USERNAMES).map_err(other)?;
                    for entry in names.range(from.as_str()..).map_err(other)? {
                        let (name, uid) = entry.map_err(other)?;
                        let (name, uid) = (name.value(), uid.value());
                        if uids.len() == limit || !name.starts_with(prefix.as_str()) {
                            break;
                        }
                        if past(name, uid) {
                            uids.push(uid as i64);
                        }
                    }
                }
                NameKey::NickName => {
                    let keys = txn.open_table(USERS_BY_NICK_KEY).map_err(other)?;
                    // Past the cursor's uid among equal names, not from
                    // the first of them.
                    let first_uid = match &after {
                        Some((name, uid)) if *name == from => (*uid as u64).saturating_add(1),
                        _ => 0,
                    };
                    for entry in keys.range((from.as_str(), first_uid)..).map_err(other)? {
                        let (key, _) = entry.map_err(other)?;
                        let (name, uid) = key.value();
                        if uids.len() == limit || !name.starts_with(prefix.as_str()) {
                            break;
                        }
                        if past(name, uid) {
                            uids.push(uid as i64);
                        }
                    }
                }
            }
            // In the names' order, as the index read them.
            let mut found: std::collections::HashMap<i64, UserDoc> =
                docs_by_ids::<UserDoc>(txn, USERS, &uids)?
                    .into_iter()
                    .map(|u| (u.uid, u))
                    .collect();
            Ok(uids.iter().filter_map(|u| found.remove(u)).collect())
        })
        .await
    }

    async fn update_profile(
        &self,
        uid: i64,
        change: ProfileChange<'_>,
    ) -> StoreResult<Option<UserDoc>> {
        let (nick, head) = (
            change.nick_name.map(String::from),
            change.head_img.map(String::from),
        );
        let window = change.album_window;
        let findable = change.findable;
        self.write(move |txn| {
            let mut users = txn.open_table(USERS).map_err(other)?;
            let Some(mut user) = get_doc::<UserDoc>(&users, id(uid))? else {
                return Ok(None);
            };
            if let Some(n) = nick.clone() {
                let mut keys = txn.open_table(USERS_BY_NICK_KEY).map_err(other)?;
                keys.remove((name_key(&user.nick_name).as_str(), id(uid)))
                    .map_err(other)?;
                keys.insert((name_key(&n).as_str(), id(uid)), ())
                    .map_err(other)?;
                user.nick_name = n;
            }
            if let Some(f) = findable {
                user.findable = f;
            }
            if let Some(h) = head.clone() {
                user.head_img = h;
            }
            if let Some(w) = window {
                user.album_window = w;
            }
            users
                .insert(id(uid), encode(&user)?.as_slice())
                .map_err(other)?;
            Ok(Some(user))
        })
        .await
    }

    async fn set_roles(&self, uid: i64, roles: &[String]) -> StoreResult<bool> {
        let roles = roles.to_vec();
        self.write(move |txn| {
            let mut users = txn.open_table(USERS).map_err(other)?;
            let Some(mut user) = get_doc::<UserDoc>(&users, id(uid))? else {
                return Ok(false);
            };
            user.roles = roles.clone();
            users
                .insert(id(uid), encode(&user)?.as_slice())
                .map_err(other)?;
            let mut staff = txn.open_table(STAFF).map_err(other)?;
            if roles.is_empty() {
                staff.remove(id(uid)).map_err(other)?;
            } else {
                staff.insert(id(uid), ()).map_err(other)?;
            }
            Ok(true)
        })
        .await
    }

    async fn set_suspension(&self, uid: i64, until: i64) -> StoreResult<bool> {
        self.write(move |txn| {
            let mut users = txn.open_table(USERS).map_err(other)?;
            let Some(mut user) = get_doc::<UserDoc>(&users, id(uid))? else {
                return Ok(false);
            };
            user.suspended_until = until;
            users
                .insert(id(uid), encode(&user)?.as_slice())
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    async fn extend_suspension(&self, uid: i64, until: i64) -> StoreResult<()> {
        self.write(move |txn| {
            let mut users = txn.open_table(USERS).map_err(other)?;
            let Some(mut user) = get_doc::<UserDoc>(&users, id(uid))? else {
                return Ok(());
            };
            if user.suspended_until >= until {
                return Ok(());
            }
            user.suspended_until = until;
            users
                .insert(id(uid), encode(&user)?.as_slice())
                .map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn staff(&self, limit: usize) -> StoreResult<Vec<i64>> {
        self.read(move |txn| {
            let staff = txn.open_table(STAFF).map_err(other)?;
            let mut out = Vec::new();
            for entry in staff.iter().map_err(other)?.take(limit) {
                out.push(entry.map_err(other)?.0.value() as i64);
            }
            Ok(out)
        })
        .await
    }

    async fn set_password_hash(
        &self,
        uid: i64,
        password_hash: &str,
        checked_gen: i64,
        credential_gen: i64,
    ) -> StoreResult<bool> {
        let hash = password_hash.to_string();
        self.update_user(uid, move |u| {
            if u.credential_gen != checked_gen {
                return false;
            }
            u.password_hash = hash.clone();
            u.credential_gen = credential_gen;
            true
        })
        .await
    }

    async fn raise_credential_gen(&self, uid: i64, credential_gen: i64) -> StoreResult<()> {
        self.update_user(uid, move |u| {
            u.credential_gen = u.credential_gen.max(credential_gen);
            true
        })
        .await
        .map(|_| ())
    }

    async fn set_session_credential_gen(
        &self,
        uid: i64,
        session_id: i64,
        credential_gen: i64,
    ) -> StoreResult<()> {
        self.update_session(uid, session_id, move |s| s.credential_gen = credential_gen)
            .await
    }

    async fn insert_session(&self, session: &SessionDoc) -> StoreResult<()> {
        let session = session.clone();
        self.write(move |txn| {
            let mut by_hash = txn.open_table(SESSION_BY_HASH).map_err(other)?;
            let mut sessions = txn.open_table(SESSIONS).map_err(other)?;
            if sessions.get(id(session.id)).map_err(other)?.is_some() {
                return Err(StoreError::IdTaken);
            }
            if by_hash
                .get(session.token_hash.as_str())
                .map_err(other)?
                .is_some()
            {
                return Err(StoreError::Duplicate("session"));
            }
            by_hash
                .insert(session.token_hash.as_str(), id(session.id))
                .map_err(other)?;
            sessions
                .insert(id(session.id), encode(&session)?.as_slice())
                .map_err(other)?;
            txn.open_table(SESSIONS_BY_USER)
                .map_err(other)?
                .insert((id(session.uid), id(session.id)), ())
                .map_err(other)?;
            txn.open_table(SESSION_EXPIRY)
                .map_err(other)?
                .insert((session.expires_at, id(session.id)), ())
                .map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn session_by_token_hash(
        &self,
        uid: i64,
        token_hash: &str,
    ) -> StoreResult<Option<SessionDoc>> {
        let hash = token_hash.to_string();
        self.read(move |txn| {
            let by_hash = txn.open_table(SESSION_BY_HASH).map_err(other)?;
            let Some(sid) = by_hash
                .get(hash.as_str())
                .map_err(other)?
                .map(|v| v.value())
            else {
                return Ok(None);
            };
            let found: Option<SessionDoc> =
                get_doc(&txn.open_table(SESSIONS).map_err(other)?, sid)?;
            Ok(found.filter(|s| s.uid == uid))
        })
        .await
    }

    async fn sessions_of_user(&self, uid: i64, limit: usize) -> StoreResult<Vec<SessionDoc>> {
        self.read(move |txn| {
            let ids = newest_below(
                &txn.open_table(SESSIONS_BY_USER).map_err(other)?,
                id(uid),
                None,
                limit,
            )?;
            let sessions = txn.open_table(SESSIONS).map_err(other)?;
            let mut out = Vec::with_capacity(ids.len());
            for sid in ids {
                if let Some(s) = get_doc(&sessions, sid)? {
                    out.push(s);
                }
            }
            Ok(out)
        })
        .await
    }

    async fn delete_sessions(&self, uid: i64, ids: &[i64]) -> StoreResult<u64> {
        let ids = ids.to_vec();
        self.write(move |txn| delete_sessions_in(txn, Some(uid), &ids))
            .await
    }

    async fn touch_session(&self, uid: i64, session_id: i64, at: i64) -> StoreResult<()> {
        self.update_session(uid, session_id, move |s| s.last_seen_at = at)
            .await
    }

    async fn purge_expired_sessions(&self, now: i64, limit: usize) -> StoreResult<u64> {
        self.write(move |txn| {
            let expired: Vec<i64> = {
                let expiry = txn.open_table(SESSION_EXPIRY).map_err(other)?;
                let mut out = Vec::new();
                for entry in expiry
                    .range((i64::MIN, 0)..(now, 0))
                    .map_err(other)?
                    .take(limit)
                {
                    out.push(entry.map_err(other)?.0.value().1 as i64);
                }
                out
            };
            delete_sessions_in(txn, None, &expired)
        })
        .await
    }

    async fn touch_user(&self, uid: i64, at: i64) -> StoreResult<()> {
        self.write(move |txn| {
            let mut users = txn.open_table(USERS).map_err(other)?;
            if let Some(mut user) = get_doc::<UserDoc>(&users, id(uid))? {
                user.last_active_at = at;
                users
                    .insert(id(uid), encode(&user)?.as_slice())
                    .map_err(other)?;
                txn.open_table(LAST_ACTIVE)
                    .map_err(other)?
                    .insert(id(uid), at)
                    .map_err(other)?;
            }
            Ok(())
        })
        .await
    }

    async fn erase_user(&self, uid: i64) -> StoreResult<bool> {
        self.write(move |txn| {
            let mut users = txn.open_table(USERS).map_err(other)?;
            let Some(mut user) = get_doc::<UserDoc>(&users, id(uid))? else {
                return Ok(false);
            };
            let mut names = txn.open_table(USERNAMES).map_err(other)?;
            names.remove(user.username.as_str()).map_err(other)?;
            txn.open_table(USERS_BY_NICK_KEY)
                .map_err(other)?
                .remove((name_key(&user.nick_name).as_str(), id(uid)))
                .map_err(other)?;
            user.username = UserDoc::erased_username(uid);
            user.nick_name.clear();
            user.head_img.clear();
            user.password_hash.clear();
            user.roles.clear();
            txn.open_table(STAFF)
                .map_err(other)?
                .remove(id(uid))
                .map_err(other)?;
            // A change of credentials checked before the erasure loses its
            // compare-and-set (`set_password_hash`).
            user.credential_gen = crate::ids::next_id().max(user.credential_gen + 1);
            names
                .insert(user.username.as_str(), id(uid))
                .map_err(other)?;
            users
                .insert(id(uid), encode(&user)?.as_slice())
                .map_err(other)?;
            txn.open_table(LAST_ACTIVE)
                .map_err(other)?
                .remove(id(uid))
                .map_err(other)?;
            txn.open_table(ERASING)
                .map_err(other)?
                .insert(id(uid), ())
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    async fn accounts_being_erased(&self, limit: usize) -> StoreResult<Vec<i64>> {
        self.read(move |txn| {
            let table = txn.open_table(ERASING).map_err(other)?;
            let mut out = Vec::new();
            for entry in table.iter().map_err(other)?.take(limit) {
                out.push(entry.map_err(other)?.0.value() as i64);
            }
            Ok(out)
        })
        .await
    }

    async fn erasure_done(&self, uid: i64) -> StoreResult<()> {
        self.write(move |txn| {
            txn.open_table(ERASING)
                .map_err(other)?
                .remove(id(uid))
                .map_err(other)?;
            Ok(())
        })
        .await
    }
}

impl EmbeddedDocs {
    /// Changes a user's document in place, if there is one.
    async fn update_user(
        &self,
        uid: i64,
        change: impl Fn(&mut UserDoc) -> bool + Send + Sync + 'static,
    ) -> StoreResult<bool> {
        self.write(move |txn| {
            let mut users = txn.open_table(USERS).map_err(other)?;
            let Some(mut user) = get_doc::<UserDoc>(&users, id(uid))? else {
                return Ok(false);
            };
            if !change(&mut user) {
                return Ok(false);
            }
            users
                .insert(id(uid), encode(&user)?.as_slice())
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    /// Changes one of `uid`'s sessions in place, if it is there and theirs.
    async fn update_session(
        &self,
        uid: i64,
        session_id: i64,
        change: impl Fn(&mut SessionDoc) + Send + Sync + 'static,
    ) -> StoreResult<()> {
        self.write(move |txn| {
            let mut sessions = txn.open_table(SESSIONS).map_err(other)?;
            if let Some(mut s) = get_doc::<SessionDoc>(&sessions, id(session_id))?
                .filter(|s: &SessionDoc| s.uid == uid)
            {
                change(&mut s);
                sessions
                    .insert(id(session_id), encode(&s)?.as_slice())
                    .map_err(other)?;
            }
            Ok(())
        })
        .await
    }
}
