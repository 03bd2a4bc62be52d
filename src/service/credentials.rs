//! An account's credentials: its password (argon2id, computed off the
//! async workers on a bounded pool, and checked as a sign-in is, against
//! the same budgets), its session tokens (kept only as SHA-256 hashes),
//! and their generation, whose raising ends every session at once. Below
//! every use case that checks a password or ends sessions (accounts,
//! strikes and their appeals, exports' links).

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use sha2::{Digest, Sha256};

use super::rate_limits::{self, enforce};
use super::{thread_pool, Context};
use crate::domain::user::{Password, Username};
use crate::error::{AppError, AppResult};
use crate::store::{BlobKey, LiveChange, LiveKey, LiveRead, Owner, SessionDoc, TokenHash, UserDoc};

/// A password as a sign-in or a confirmation may send it: any string up to
/// the longest a password can be (longer ones are refused before hashing).
pub(crate) fn password_attempt_schema() -> utoipa::openapi::Object {
    crate::domain::StringSchema {
        max: Some(Password::MAX_CHARS),
        ..Default::default()
    }
    .build()
}

/// Where a request comes from, for its rate limits.
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// What per-address limits count by (`domain::addr::limit_subject`).
    pub addr: Option<String>,
    pub user_agent: Option<String>,
}

pub(super) fn refused(r: thread_pool::Refused) -> AppError {
    match r {
        thread_pool::Refused::Busy => AppError::Overloaded("password checks"),
        thread_pool::Refused::Gone => {
            AppError::Internal(anyhow::anyhow!("the password pool is gone"))
        }
    }
}

pub(super) async fn hash_password(ctx: &Context, password: String) -> AppResult<String> {
    ctx.password_hashes
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    thread_pool::passwords()
        .run(move || {
            let mut salt = [0u8; 16];
            getrandom::getrandom(&mut salt).map_err(|e| AppError::Internal(anyhow::anyhow!(e)))?;
            let salt = SaltString::encode_b64(&salt)
                .map_err(|e| AppError::Internal(anyhow::anyhow!(e)))?;
            Argon2::default()
                .hash_password(password.as_bytes(), &salt)
                .map(|h| h.to_string())
                .map_err(|e| AppError::Internal(anyhow::anyhow!(e)))
        })
        .await
        .map_err(refused)?
}

pub(super) async fn verify_password(
    ctx: &Context,
    password: String,
    hash: String,
) -> AppResult<bool> {
    ctx.password_hashes
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    thread_pool::passwords()
        .run(move || {
            let parsed =
                PasswordHash::new(&hash).map_err(|e| AppError::Internal(anyhow::anyhow!(e)))?;
            Ok(Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok())
        })
        .await
        .map_err(refused)?
}

/// A hash of a password nobody has, so that an unknown username costs as
/// much time as a wrong password and does not reveal which usernames exist.
pub(super) async fn dummy_verify(ctx: &Context, password: String) -> AppResult<()> {
    const DUMMY: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$3iYdcWTjSRr0FC8UvnvUDxHcfbBaEVtFJdSg9+vRAcs";
    verify_password(ctx, password, DUMMY.to_string())
        .await
        .map(|_| ())
}

/// A new token for `uid`: `UID.` and 32 random bytes in hex. The uid lets a
/// lookup find the session's cache entry under its user's hash tag.
pub(super) fn new_token(uid: i64) -> AppResult<String> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| AppError::Internal(anyhow::anyhow!(e)))?;
    let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{uid}.{secret}"))
}

pub fn token_hash(token: &str) -> TokenHash {
    TokenHash(Sha256::digest(token.as_bytes()).into())
}

/// The uid a token names and the token's hash; 401 for anything that is
/// not a token this service made.
pub(super) fn parse_token(token: &str) -> AppResult<(i64, TokenHash)> {
    let invalid = AppError::Unauthorized("invalid token");
    let (uid, secret) = token.split_once('.').ok_or(invalid)?;
    let uid = uid
        .parse::<i64>()
        .ok()
        .filter(|u| *u > 0)
        .ok_or(AppError::Unauthorized("invalid token"))?;
    if secret.len() != 64 || !secret.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(AppError::Unauthorized("invalid token"));
    }
    Ok((uid, token_hash(token)))
}

/// The account a username and password name, checked as a sign-in is:
/// the address's and the name's budgets of attempts, the same work and
/// answer for a name nobody has, a right password forgiven its attempt.
pub async fn check_password(
    ctx: &Context,
    username: &str,
    password: String,
    origin: &Origin,
) -> AppResult<UserDoc> {
    let denied = AppError::Unauthorized("wrong username or password");
    // Bounded before anything is hashed: a megabyte of "password" is refused
    // here, not fed to argon2.
    Password::check_length(&password)?;
    let limits = ctx.settings.rate_limits.as_ref();
    enforce(
        ctx,
        &rate_limits::login_address_budget(limits, origin.addr.as_deref()),
    )
    .await?;
    let Ok(username) = Username::parse(username) else {
        dummy_verify(ctx, password).await?;
        return Err(denied);
    };
    // No failure counter for a name nobody has: a flood of made-up names
    // would make one each, and the table they share protects real accounts.
    let Some(user) = ctx.docs.user_by_username(username.as_str()).await? else {
        dummy_verify(ctx, password).await?;
        return Err(denied);
    };
    enforce(
        ctx,
        &rate_limits::login_failure_budget(limits, username.as_str()),
    )
    .await?;
    if !verify_password(ctx, password, user.password_hash.clone()).await? {
        return Err(denied);
    }
    forgive_failure(ctx, username.as_str()).await;
    Ok(user)
}

/// Takes back the failure a right password was counted as up front.
pub(super) async fn forgive_failure(ctx: &Context, username: &str) {
    let limits = ctx.settings.rate_limits.as_ref();
    if let Some(forgive) = rate_limits::forgive_failure(limits, username) {
        let read = LiveRead {
            limits: vec![forgive],
            ..Default::default()
        };
        if let Err(e) = ctx.live.read(&read).await {
            tracing::debug!(error = %e, "a right password's attempt stays counted");
        }
    }
}

/// Signs these sessions of `uid` out: gone from the documents, then from
/// the cache (a failed cache drop is retried by the repair task, and reads
/// of this user bypass the cache until then).
pub(super) async fn close_sessions(
    ctx: &Context,
    uid: i64,
    sessions: &[SessionDoc],
) -> AppResult<()> {
    if sessions.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = sessions.iter().map(|s| s.id).collect();
    ctx.docs.delete_sessions(uid, &ids).await?;
    let changes = sessions
        .iter()
        .filter_map(|s| parse_hex_hash(&s.token_hash))
        .map(|h| LiveChange::Drop(LiveKey::Blob(BlobKey::Session(uid, h))))
        .collect();
    ctx.repair
        .apply_unordered(ctx.live.as_ref(), Owner::User(uid), changes)
        .await;
    super::stream::events::sessions_ended(ctx, uid);
    Ok(())
}

pub(super) fn parse_hex_hash(hex: &str) -> Option<TokenHash> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(TokenHash(out))
}

/// Signs out every session of `uid`: first in the account, so that a
/// session being opened right now is not honoured either, then each one.
pub async fn sign_out_everywhere(ctx: &Context, uid: i64) -> AppResult<()> {
    let user = me_doc(ctx, uid).await?;
    ctx.docs
        .raise_credential_gen(uid, next_credential_gen(&user))
        .await?;
    credentials_changed(ctx, uid).await;
    tidy_sessions(ctx, uid, None).await;
    Ok(())
}

/// After a change of an account's `credentialGen`: its cached card, which
/// every cached session of it is checked against, is dropped (or, if that
/// fails, the account's cache is bypassed until the repair task drops it),
/// so no session opened before is honoured on its next request, whatever
/// becomes of signing them out one by one.
pub async fn credentials_changed(ctx: &Context, uid: i64) {
    ctx.repair
        .apply_unordered(
            ctx.live.as_ref(),
            Owner::User(uid),
            vec![LiveChange::Drop(LiveKey::Blob(BlobKey::Card(uid)))],
        )
        .await;
    super::stream::events::sessions_ended(ctx, uid);
}

/// Signs out every session of `uid` but `keep`, once they are dishonoured
/// anyway: a failure leaves documents that no request honours, so it is
/// logged, not answered.
pub(super) async fn tidy_sessions(ctx: &Context, uid: i64, keep: Option<i64>) {
    if let Err(e) = close_all_but(ctx, uid, 0, keep).await {
        tracing::warn!(uid, error = %e, "dishonoured sessions are left to expire");
    }
}

/// A `credentialGen` above the account's: a fresh id (so instances never
/// pick the same one), or one more than the account's if that is higher
/// (another instance's clock ran ahead).
pub(super) fn next_credential_gen(user: &UserDoc) -> i64 {
    crate::ids::next_id().max(user.credential_gen + 1)
}

/// Signs out all of `uid`'s sessions but the newest `kept` (and `keep`),
/// a batch at a time until none is left: however many sign-ins raced past
/// the bound, none survives.
pub(super) async fn close_all_but(
    ctx: &Context,
    uid: i64,
    kept: usize,
    keep: Option<i64>,
) -> AppResult<()> {
    const BATCH: usize = 64;
    for _ in 0..1000 {
        let newest = ctx.docs.sessions_of_user(uid, kept + BATCH + 1).await?;
        let full = newest.len() == kept + BATCH + 1;
        let closing: Vec<SessionDoc> = newest
            .into_iter()
            .skip(kept)
            .filter(|s| Some(s.id) != keep)
            .collect();
        if closing.is_empty() {
            return Ok(());
        }
        close_sessions(ctx, uid, &closing).await?;
        if !full {
            return Ok(());
        }
    }
    Ok(())
}

/// The signed-in account's document. One erased since its session was
/// checked (a second `DELETE /me`, a password change racing the deletion)
/// is as gone as one that was never there: its tombstone has no password
/// to check.
pub(super) async fn me_doc(ctx: &Context, uid: i64) -> AppResult<UserDoc> {
    ctx.docs
        .users_by_ids(&[uid])
        .await?
        .pop()
        .filter(|u| !u.is_erased())
        .ok_or(AppError::Unauthorized("account no longer exists"))
}
