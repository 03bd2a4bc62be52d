//! Accounts and sessions. Passwords are argon2id hashes, computed off the
//! async workers; sessions are opaque random tokens in the live store with a
//! 30-day TTL (seed 002), so losing the live store only logs users out.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use serde::{Deserialize, Serialize};

use super::password_pool;
use super::Context;
use crate::domain::user::{HeadImg, NickName, Password, Username};
use crate::error::{AppError, AppResult};
use crate::ids::{next_id, now_ms};
use crate::store::{BlobKey, Changes, LiveChange, LiveKey, Owner, StoreError, UserCard, UserDoc};

pub const SESSION_TTL_SECS: u64 = 30 * 24 * 3600;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegisterRequest {
    pub username: String,
    pub password: String,
    #[serde(default)]
    pub nick_name: Option<String>,
    #[serde(default)]
    pub head_img: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct LoginRequest {
    pub username: String,
    pub password: String,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfilePatch {
    #[serde(default)]
    pub nick_name: Option<String>,
    #[serde(default)]
    pub head_img: Option<String>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub token: String,
    pub expires_at: i64,
    pub user: UserCard,
}

/// The signed-in user's own view of their account.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Me {
    pub uid: i64,
    pub username: String,
    pub nick_name: String,
    pub head_img: String,
    pub roles: Vec<String>,
    pub created_at: i64,
}

impl From<UserDoc> for Me {
    fn from(u: UserDoc) -> Self {
        Me {
            uid: u.uid,
            username: u.username,
            nick_name: u.nick_name,
            head_img: u.head_img,
            roles: u.roles,
            created_at: u.created_at,
        }
    }
}

fn pool_gone() -> AppError {
    AppError::Internal(anyhow::anyhow!("the password pool is gone"))
}

async fn hash_password(password: String) -> AppResult<String> {
    password_pool::run(move || {
        let mut salt = [0u8; 16];
        getrandom::getrandom(&mut salt).map_err(|e| AppError::Internal(anyhow::anyhow!(e)))?;
        let salt =
            SaltString::encode_b64(&salt).map_err(|e| AppError::Internal(anyhow::anyhow!(e)))?;
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| AppError::Internal(anyhow::anyhow!(e)))
    })
    .await
    .ok_or_else(pool_gone)?
}

async fn verify_password(password: String, hash: String) -> AppResult<bool> {
    password_pool::run(move || {
        let parsed =
            PasswordHash::new(&hash).map_err(|e| AppError::Internal(anyhow::anyhow!(e)))?;
        Ok(Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok())
    })
    .await
    .ok_or_else(pool_gone)?
}

/// A hash of a password nobody has, so that an unknown username costs as
/// much time as a wrong password and does not reveal which usernames exist.
async fn dummy_verify(password: String) {
    const DUMMY: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$3iYdcWTjSRr0FC8UvnvUDxHcfbBaEVtFJdSg9+vRAcs";
    let _ = verify_password(password, DUMMY.to_string()).await;
}

fn new_token() -> AppResult<String> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).map_err(|e| AppError::Internal(anyhow::anyhow!(e)))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[tracing::instrument(skip(ctx, req), fields(username = %req.username))]
pub async fn register(ctx: &Context, req: RegisterRequest) -> AppResult<UserCard> {
    let username = Username::parse(&req.username)?;
    let password = Password::parse(&req.password)?;
    let nick = match req.nick_name.as_deref() {
        Some(n) => NickName::parse(n)?.into_inner(),
        None => username.as_str().to_string(),
    };
    let head = HeadImg::parse(req.head_img.as_deref().unwrap_or(""))?.into_inner();
    let now = now_ms();
    let user = UserDoc {
        uid: next_id(),
        username: username.as_str().to_string(),
        nick_name: nick,
        head_img: head,
        password_hash: hash_password(password.expose().to_string()).await?,
        roles: Vec::new(),
        created_at: now,
        last_active_at: now,
    };
    match ctx.docs.insert_user(&user).await {
        Ok(()) => Ok(user.card()),
        Err(StoreError::Duplicate(_)) => Err(AppError::Conflict(format!(
            "username {} is taken",
            user.username
        ))),
        Err(e) => Err(e.into()),
    }
}

#[tracing::instrument(skip(ctx, req), fields(username = %req.username))]
pub async fn login(ctx: &Context, req: LoginRequest) -> AppResult<Session> {
    let denied = AppError::Unauthorized("wrong username or password");
    let Ok(username) = Username::parse(&req.username) else {
        dummy_verify(req.password).await;
        return Err(denied);
    };
    let Some(user) = ctx.docs.user_by_username(username.as_str()).await? else {
        dummy_verify(req.password).await;
        return Err(denied);
    };
    if !verify_password(req.password, user.password_hash.clone()).await? {
        return Err(denied);
    }
    let token = new_token()?;
    ctx.live
        .put_session(&token, user.uid, SESSION_TTL_SECS)
        .await?;
    let now = now_ms();
    if let Ok(mut seen) = ctx.activity.lock() {
        seen.insert(user.uid, now);
    }
    if let Err(e) = ctx.docs.touch_user(user.uid, now).await {
        tracing::warn!(error = %e, "could not record last activity");
    }
    Ok(Session {
        token,
        expires_at: now + SESSION_TTL_SECS as i64 * 1000,
        user: user.card(),
    })
}

pub async fn logout(ctx: &Context, token: &str) -> AppResult<()> {
    ctx.live.drop_session(token).await?;
    Ok(())
}

/// The uid behind a bearer token. An unknown token is an error, never
/// silently anonymous.
pub async fn authenticate(ctx: &Context, token: &str) -> AppResult<i64> {
    if token.is_empty() || token.len() > 128 {
        return Err(AppError::Unauthorized("invalid token"));
    }
    let uid = ctx
        .live
        .session_uid(token)
        .await?
        .ok_or(AppError::Unauthorized("invalid or expired token"))?;
    note_activity(ctx, uid);
    Ok(uid)
}

/// How often a user's `lastActiveAt` is written while they are active.
const ACTIVITY_EVERY_MS: i64 = 3600 * 1000;

/// Records that `uid` is active (for fan-out), at most once an hour per
/// instance and off the request's path.
fn note_activity(ctx: &Context, uid: i64) {
    let now = now_ms();
    let due = match ctx.activity.lock() {
        Ok(mut seen) => {
            if seen.len() > 1_000_000 {
                seen.clear();
            }
            match seen.get(&uid) {
                Some(at) if now - at < ACTIVITY_EVERY_MS => false,
                _ => {
                    seen.insert(uid, now);
                    true
                }
            }
        }
        Err(_) => false,
    };
    if due {
        let docs = ctx.docs.clone();
        tokio::spawn(async move {
            if let Err(e) = docs.touch_user(uid, now).await {
                tracing::debug!(uid, error = %e, "could not record activity");
            }
        });
    }
}

pub async fn me(ctx: &Context, uid: i64) -> AppResult<Me> {
    ctx.docs
        .users_by_ids(&[uid])
        .await?
        .pop()
        .map(Me::from)
        .ok_or(AppError::Unauthorized("account no longer exists"))
}

pub async fn require_admin(ctx: &Context, uid: i64) -> AppResult<()> {
    let user = ctx.docs.users_by_ids(&[uid]).await?.pop();
    match user {
        Some(u) if u.is_admin() => Ok(()),
        _ => Err(AppError::Forbidden("this needs the admin role")),
    }
}

#[tracing::instrument(skip(ctx, patch))]
pub async fn update_me(ctx: &Context, uid: i64, patch: ProfilePatch) -> AppResult<Me> {
    let nick = patch
        .nick_name
        .as_deref()
        .map(NickName::parse)
        .transpose()?
        .map(NickName::into_inner);
    let head = patch
        .head_img
        .as_deref()
        .map(HeadImg::parse)
        .transpose()?
        .map(HeadImg::into_inner);
    let user = ctx
        .docs
        .update_profile(uid, nick.as_deref(), head.as_deref())
        .await?
        .ok_or(AppError::Unauthorized("account no longer exists"))?;
    ctx.repair
        .apply(
            ctx.live.as_ref(),
            vec![Changes {
                owner: Owner::User(uid),
                expected_gen: None,
                changes: vec![LiveChange::Drop(LiveKey::Blob(BlobKey::Card(uid)))],
            }],
        )
        .await;
    Ok(user.into())
}

/// Makes sure the configured admin exists with the configured password and
/// the admin role: created or updated, the same after any number of runs.
pub async fn bootstrap_admin(ctx: &Context, username: &str, password: &str) -> AppResult<i64> {
    let name = Username::parse(username)?;
    let pw = Password::parse(password)?;
    if let Some(user) = ctx.docs.user_by_username(name.as_str()).await? {
        let same = verify_password(pw.expose().to_string(), user.password_hash.clone()).await?;
        if !same || !user.is_admin() {
            let hash = if same {
                user.password_hash.clone()
            } else {
                hash_password(pw.expose().to_string()).await?
            };
            ctx.docs.grant_admin(user.uid, &hash).await?;
        }
        return Ok(user.uid);
    }
    let card = register(
        ctx,
        RegisterRequest {
            username: name.as_str().to_string(),
            password: pw.expose().to_string(),
            nick_name: None,
            head_img: None,
        },
    )
    .await;
    let uid = match card {
        Ok(c) => c.uid,
        // Another instance created it a moment ago: take that one.
        Err(AppError::Conflict(_)) => ctx
            .docs
            .user_by_username(name.as_str())
            .await?
            .map(|u| u.uid)
            .ok_or_else(|| AppError::Internal(anyhow::anyhow!("admin vanished")))?,
        Err(e) => return Err(e),
    };
    let hash = ctx
        .docs
        .users_by_ids(&[uid])
        .await?
        .pop()
        .map(|u| u.password_hash)
        .unwrap_or_default();
    ctx.docs.grant_admin(uid, &hash).await?;
    Ok(uid)
}
