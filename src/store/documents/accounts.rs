//! Accounts and sessions: the user document, the card every list shows
//! beside an item, and the session a bearer token names.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::domain::user::AlbumWindow;
use crate::store::StoreResult;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UserDoc {
    #[serde(rename = "_id")]
    pub uid: i64,
    pub username: String,
    #[serde(rename = "nickName")]
    pub nick_name: String,
    #[serde(rename = "headImg")]
    pub head_img: String,
    #[serde(rename = "passwordHash")]
    pub password_hash: String,
    #[serde(default)]
    pub roles: Vec<String>,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
    #[serde(rename = "lastActiveAt")]
    pub last_active_at: i64,
    /// How far back others see this user's posts.
    #[serde(
        rename = "albumWindow",
        default,
        skip_serializing_if = "AlbumWindow::is_all"
    )]
    pub album_window: AlbumWindow,
    /// Raised (to a fresh id) by every change that must end the sessions
    /// opened before it: a new password, signing out everywhere. A session
    /// holds the value it was opened under and is good only while that is
    /// no lower, so a sign-in that checked the old password before the
    /// change and stored its session after still opens nothing.
    #[serde(rename = "credentialGen", default)]
    pub credential_gen: i64,
    /// Epoch ms until which a moderator suspended the account (`BANNED`:
    /// without end); 0 when it never was. While it lasts the account
    /// cannot sign in and has no card, so every read leaves its content
    /// out as it does an erased account's; it is back the first read
    /// after, with nothing to undo.
    #[serde(rename = "suspendedUntil", default, skip_serializing_if = "is_zero")]
    pub suspended_until: i64,
    /// Whether people who do not follow this account may find it by name
    /// and find its public posts by their words (`service::search`); its
    /// followers always can. On unless the user turns it off.
    #[serde(default = "yes", deserialize_with = "crate::store::lenient_bool")]
    pub findable: bool,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

fn yes() -> bool {
    true
}

/// `suspendedUntil` of a banned account: suspended until an admin lifts it.
pub const BANNED: i64 = i64::MAX;

impl UserDoc {
    /// A new account as sign-up makes it: named `username` (its nickname
    /// too), made and last active `now`, no role, every post shown, never
    /// suspended. A new field gets its starting value here, and every
    /// fixture with it.
    pub fn new(uid: i64, username: impl Into<String>, password_hash: String, now: i64) -> Self {
        let username = username.into();
        UserDoc {
            uid,
            nick_name: username.clone(),
            username,
            head_img: String::new(),
            password_hash,
            roles: Vec::new(),
            created_at: now,
            last_active_at: now,
            album_window: AlbumWindow::All,
            credential_gen: 0,
            suspended_until: 0,
            findable: true,
        }
    }

    pub fn is_suspended(&self, now: i64) -> bool {
        self.suspended_until > now
    }

    /// Whether the account shows nothing to anyone: erased, or suspended.
    pub fn is_withheld(&self, now: i64) -> bool {
        self.is_erased() || self.is_suspended(now)
    }

    /// What a deleted account's username becomes: not a name anyone can
    /// register or sign in with (`#` is not allowed in usernames).
    pub fn erased_username(uid: i64) -> String {
        format!("deleted#{uid}")
    }

    pub fn is_erased(&self) -> bool {
        self.username.starts_with("deleted#")
    }

    pub fn card(&self) -> UserCard {
        UserCard {
            uid: self.uid,
            nick_name: self.nick_name.clone(),
            head_img: self.head_img.clone(),
        }
    }
    pub fn is_admin(&self) -> bool {
        self.roles.iter().any(|r| r == "admin")
    }

    /// What the live store caches of the account: the card, and the album
    /// window every read of this user's older posts needs beside it.
    pub fn cached_card(&self) -> CachedCard {
        CachedCard {
            card: self.card(),
            album_window: self.album_window,
            credential_gen: self.credential_gen,
        }
    }
}

/// A card as the live store keeps it (`BlobKey::Card`). Read as a plain
/// `UserCard` wherever the window does not matter: the extra field is
/// ignored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CachedCard {
    #[serde(flatten)]
    pub card: UserCard,
    #[serde(
        rename = "albumWindow",
        default,
        skip_serializing_if = "AlbumWindow::is_all"
    )]
    pub album_window: AlbumWindow,
    /// The account's `credentialGen`, which a cached session is checked
    /// against on every use (`SessionDoc::honoured_by_card`).
    #[serde(rename = "credentialGen", default)]
    pub credential_gen: i64,
}

/// A profile change: what is `Some` replaces what was.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProfileChange<'a> {
    pub nick_name: Option<&'a str>,
    pub head_img: Option<&'a str>,
    pub album_window: Option<AlbumWindow>,
    pub findable: Option<bool>,
}

/// Which of an account's names a people search reads by its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKey {
    /// The username, as it is (lowercase already).
    Username,
    /// The nickname folded (`search_text::name_key`): what the stores
    /// index beside the account (`nickKey`).
    NickName,
}

impl NameKey {
    /// `user`'s name of this kind, as the index orders it.
    pub fn of(self, user: &UserDoc) -> String {
        match self {
            NameKey::Username => user.username.clone(),
            NameKey::NickName => crate::domain::search_text::name_key(&user.nick_name),
        }
    }
}

/// A user's card: what every list shows next to an item.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserCard {
    pub uid: i64,
    pub nick_name: String,
    pub head_img: String,
}

/// The SHA-256 of a bearer token: all that is ever stored of it, so a dump
/// of either store holds no token anyone can use.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenHash(pub [u8; 32]);

impl TokenHash {
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The inverse of `hex`.
    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Self(out))
    }
}

impl std::fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A hash is no secret, but logs need no more than its start.
        write!(f, "TokenHash({}…)", &self.hex()[..8])
    }
}

/// One signed-in device of an account: the record behind a bearer token.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SessionDoc {
    /// The session's id, which the account's owner sees and signs out by.
    #[serde(rename = "_id")]
    pub id: i64,
    pub uid: i64,
    /// Hex SHA-256 of the token.
    #[serde(rename = "tokenHash")]
    pub token_hash: String,
    /// What the client said it is (a `device` field at sign-in, else its
    /// `User-Agent`), shortened.
    pub device: String,
    #[serde(rename = "createdAt")]
    pub created_at: i64,
    #[serde(rename = "lastSeenAt")]
    pub last_seen_at: i64,
    #[serde(rename = "expiresAt")]
    pub expires_at: i64,
    /// The account's `credentialGen` this session was opened under.
    #[serde(rename = "credentialGen", default)]
    pub credential_gen: i64,
}

impl SessionDoc {
    /// A session opened at `created_at` and last seen then, on no named
    /// device, at credential generation 0.
    pub fn new(id: i64, uid: i64, token_hash: String, created_at: i64, expires_at: i64) -> Self {
        Self {
            id,
            uid,
            token_hash,
            device: String::new(),
            created_at,
            last_seen_at: created_at,
            expires_at,
            credential_gen: 0,
        }
    }

    /// `honoured_by`, as the live store has the account: its card, which
    /// an erased account has none of, and which every change of
    /// credentials drops.
    pub fn honoured_by_card(&self, card: &CachedCard) -> bool {
        card.card.uid == self.uid && self.credential_gen >= card.credential_gen
    }

    /// Whether `user`, as the documents have it now, still honours this
    /// session: it exists, is neither erased nor suspended, and no change
    /// of credentials came after the session was opened.
    pub fn honoured_by(&self, user: Option<&UserDoc>) -> bool {
        user.is_some_and(|u| {
            u.uid == self.uid
                && !u.is_withheld(crate::ids::now_ms())
                && self.credential_gen >= u.credential_gen
        })
    }
}

/// Accounts and their sessions. Part of `DocStore`.
#[async_trait]
pub trait AccountDocs: Send + Sync {
    /// `Duplicate("username")` when the name is taken.
    async fn insert_user(&self, user: &UserDoc) -> StoreResult<()>;

    async fn user_by_username(&self, username: &str) -> StoreResult<Option<UserDoc>>;

    async fn users_by_ids(&self, uids: &[i64]) -> StoreResult<Vec<UserDoc>>;

    /// `users_by_ids` for work off any request's path (the search
    /// indexer), which the round-trip counters leave out.
    async fn users_for_indexing(&self, uids: &[i64]) -> StoreResult<Vec<UserDoc>> {
        self.users_by_ids(uids).await
    }

    /// Users by (normalised) username, one round trip for all of them.
    async fn users_by_usernames(&self, usernames: &[String]) -> StoreResult<Vec<UserDoc>>;

    /// Up to `limit` accounts whose name `by` starts with `prefix` (a
    /// `search_text::name_key` for nicknames), ordered by that name and
    /// then uid, from just past `after` (a name and a uid) when given:
    /// one indexed range read, however many accounts there are.
    async fn users_by_name_prefix(
        &self,
        by: NameKey,
        prefix: &str,
        after: Option<(String, i64)>,
        limit: usize,
    ) -> StoreResult<Vec<UserDoc>>;

    /// Sets an account's roles; false when there is no such account.
    async fn set_roles(&self, uid: i64, roles: &[String]) -> StoreResult<bool>;

    /// Sets until when the account is suspended (0: not); false when
    /// there is no such account.
    async fn set_suspension(&self, uid: i64, until: i64) -> StoreResult<bool>;

    /// Suspends the account until `until` unless it already is until
    /// later, in one write: of two suspensions at once, the longer holds.
    async fn extend_suspension(&self, uid: i64, until: i64) -> StoreResult<()>;

    /// Up to `limit` accounts with any role (moderators and admins): whom
    /// a new report is told to.
    async fn staff(&self, limit: usize) -> StoreResult<Vec<i64>>;

    async fn update_profile(
        &self,
        uid: i64,
        change: ProfileChange<'_>,
    ) -> StoreResult<Option<UserDoc>>;

    /// Sets the password hash and `credentialGen` to `credential_gen`, in
    /// one write, if the account's `credentialGen` is still `checked_gen`
    /// (the one its old password was checked under); false, writing
    /// nothing, if another change of credentials came first.
    async fn set_password_hash(
        &self,
        uid: i64,
        password_hash: &str,
        checked_gen: i64,
        credential_gen: i64,
    ) -> StoreResult<bool>;

    /// Raises the account's `credentialGen` to at least `credential_gen`:
    /// every session opened under a lower one stops being honoured.
    async fn raise_credential_gen(&self, uid: i64, credential_gen: i64) -> StoreResult<()>;

    /// Sets the `credentialGen` one session of `uid` is held to (the one a
    /// password change keeps).
    async fn set_session_credential_gen(
        &self,
        uid: i64,
        session_id: i64,
        credential_gen: i64,
    ) -> StoreResult<()>;

    async fn touch_user(&self, uid: i64, at: i64) -> StoreResult<()>;

    /// `Duplicate("session")` if its id or token hash exists already.
    async fn insert_session(&self, session: &SessionDoc) -> StoreResult<()>;

    /// `uid`'s session behind a token hash, expired or not: the caller
    /// decides. (The token names its uid, the sessions' shard key.)
    async fn session_by_token_hash(
        &self,
        uid: i64,
        token_hash: &str,
    ) -> StoreResult<Option<SessionDoc>>;

    /// Up to `limit` of a user's sessions, newest first.
    async fn sessions_of_user(&self, uid: i64, limit: usize) -> StoreResult<Vec<SessionDoc>>;

    /// Deletes those of these sessions that belong to `uid`; how many went.
    async fn delete_sessions(&self, uid: i64, ids: &[i64]) -> StoreResult<u64>;

    /// Records that `uid`'s session `id` was used at `at`.
    async fn touch_session(&self, uid: i64, id: i64, at: i64) -> StoreResult<()>;

    /// Deletes up to `limit` sessions that expired before `now`; how many went.
    async fn purge_expired_sessions(&self, now: i64, limit: usize) -> StoreResult<u64>;

    /// Turns a deleted account into its tombstone: the username becomes
    /// `UserDoc::erased_username(uid)` (so the name is free, and nobody can
    /// sign in with it), the card, password and roles are emptied, and the
    /// account is marked as being erased until `erasure_done`. False if
    /// there was no such account.
    async fn erase_user(&self, uid: i64) -> StoreResult<bool>;

    /// Up to `limit` accounts marked as being erased.
    async fn accounts_being_erased(&self, limit: usize) -> StoreResult<Vec<i64>>;

    /// Clears the mark: nothing of the account is left to erase.
    async fn erasure_done(&self, uid: i64) -> StoreResult<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A suspension ends by itself: the account is withheld while it lasts
    /// and whole the moment after, with nothing written; a ban never ends.
    #[test]
    fn a_suspension_withholds_the_account_until_it_ends() {
        let now = 1_000_000;
        let user = |suspended_until: i64| UserDoc {
            suspended_until,
            ..UserDoc::new(7, "u7", String::new(), 0)
        };
        let session = SessionDoc {
            id: 1,
            uid: 7,
            token_hash: String::new(),
            device: String::new(),
            created_at: 0,
            last_seen_at: 0,
            expires_at: i64::MAX,
            credential_gen: 0,
        };
        for (until, withheld) in [
            (0, false),
            (now - 1, false),
            (now, false),
            (now + 1, true),
            (BANNED, true),
        ] {
            let u = user(until);
            assert_eq!(u.is_suspended(now), withheld, "until {until}");
            assert_eq!(u.is_withheld(now), withheld, "until {until}");
        }
        // Sessions are judged at the real time: a ban dishonours them, an
        // ended suspension does not.
        assert!(!session.honoured_by(Some(&user(BANNED))));
        assert!(session.honoured_by(Some(&user(1))));
        let erased = UserDoc {
            username: UserDoc::erased_username(7),
            ..user(0)
        };
        assert!(erased.is_withheld(now) && !erased.is_suspended(now));
    }
}
