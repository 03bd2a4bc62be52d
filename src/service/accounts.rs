//! Accounts and sessions. Passwords are argon2id hashes, computed off the
//! async workers on a bounded pool. A session is a document (a sign-in
//! lasts 30 days), cached in the live store under its user; its bearer token
//! is `UID.SECRET` and is kept nowhere, only its SHA-256. So losing the live
//! store logs nobody out, and a dump of either store signs nobody in.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::credentials::{
    check_password, close_all_but, close_sessions, credentials_changed, forgive_failure,
    hash_password, me_doc, new_token, next_credential_gen, parse_token, password_attempt_schema,
    tidy_sessions, token_hash, verify_password, Origin,
};
use super::rate_limits::{self, enforce, Budget, Traffic};
use super::read::loader::{from_json, to_json};
use super::read::responses::Page;
use super::{insert_reserved, with_fresh_id, Context};
use crate::domain::user::{self, AlbumWindow, HeadImg, NickName, Password, Username};
use crate::error::{AppError, AppResult};
use crate::ids::now_ms;
use crate::store::{
    BlobKey, CachedCard, LiveChange, LiveFill, LiveKey, LiveRead, Owner, ProfileChange, SessionDoc,
    StoreError, TokenHash, UserCard, UserDoc, BANNED,
};

pub const SESSION_TTL_SECS: u64 = 30 * 24 * 3600;
/// Signed-in devices an account keeps; signing in on one more signs out the
/// longest-standing. Bounds what "sign out everywhere" has to do.
pub const MAX_SESSIONS: usize = 50;
/// What of a `User-Agent` or `device` is kept.
const DEVICE_CHARS: usize = 128;

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegisterRequest {
    /// Letters (stored lower-case), digits, `_`, `.`, `-`.
    #[schema(schema_with = user::username_schema)]
    pub username: String,
    #[schema(schema_with = user::password_schema)]
    pub password: String,
    /// The username when absent.
    #[serde(default)]
    #[schema(schema_with = user::nick_name_schema)]
    pub nick_name: Option<String>,
    /// An http(s) URL, or empty for none.
    #[serde(default)]
    #[schema(schema_with = user::head_img_schema)]
    pub head_img: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct LoginRequest {
    /// A name no account can have is answered as a wrong password is.
    #[schema(schema_with = crate::domain::user::username_schema)]
    pub username: String,
    #[schema(schema_with = password_attempt_schema)]
    pub password: String,
    /// What to call this device in the account's list of sessions; the
    /// `User-Agent` when absent.
    #[serde(default)]
    pub device: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct AccountDeletion {
    /// The account's password, asked again.
    #[schema(schema_with = password_attempt_schema)]
    pub password: String,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordChange {
    #[schema(schema_with = password_attempt_schema)]
    pub old_password: String,
    #[schema(schema_with = user::password_schema)]
    pub new_password: String,
}

/// One signed-in device, as its account's owner sees it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub id: i64,
    pub device: String,
    pub created_at: i64,
    pub last_seen_at: i64,
    pub expires_at: i64,
    /// The session this request was made with.
    pub current: bool,
}

/// A signed-in request: who, and with which session.
#[derive(Debug, Clone, Copy)]
pub struct Authed {
    pub uid: i64,
    pub session_id: i64,
    pub token_hash: TokenHash,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfilePatch {
    #[serde(default)]
    #[schema(schema_with = user::nick_name_schema)]
    pub nick_name: Option<String>,
    /// An http(s) URL, or empty to remove the picture.
    #[serde(default)]
    #[schema(schema_with = user::head_img_schema)]
    pub head_img: Option<String>,
    /// How far back others see the caller's posts (WeChat's 最近三天 / 一个月 / 半年 / 全部).
    #[serde(default)]
    pub album_window: Option<AlbumWindow>,
    /// Whether people who do not follow the caller may find them by name
    /// and find their public posts by words (followers always can).
    #[serde(default)]
    pub findable: Option<bool>,
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
    /// How far back others see this user's posts.
    pub album_window: AlbumWindow,
    /// Whether people who do not follow this user may find them by name
    /// and find their public posts by words.
    pub findable: bool,
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
            album_window: u.album_window,
            findable: u.findable,
        }
    }
}

/// When each id (a user, a session) was last recorded active by this
/// instance, so that activity is written at most once an hour per id.
#[derive(Default)]
pub struct RecentActivity(Mutex<HashMap<i64, i64>>);

impl RecentActivity {
    /// Whether `id`'s activity at `now` is due to be written; notes it if so.
    fn due(&self, id: i64, now: i64) -> bool {
        let Ok(mut seen) = self.0.lock() else {
            return false;
        };
        if seen.len() > 1_000_000 {
            seen.clear();
        }
        match seen.get(&id) {
            Some(at) if now - at < ACTIVITY_EVERY_MS => false,
            _ => {
                seen.insert(id, now);
                true
            }
        }
    }
}

/// A device name fit to list: no control characters, bounded.
fn device_name(given: Option<&str>, user_agent: Option<&str>) -> String {
    given
        .filter(|d| !d.trim().is_empty())
        .or(user_agent)
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(DEVICE_CHARS)
        .collect::<String>()
        .trim()
        .to_string()
}

/// A sign-up that passed every check and was charged to its address's
/// budget: all `register` needs to make the account.
pub struct Registration {
    username: Username,
    password: Password,
    nick_name: String,
    head_img: String,
}

impl Registration {
    /// What identifies this sign-up for an `Idempotency-Key`: everything but
    /// the password, which no record of a request may keep, even hashed (a
    /// fast hash of it is a cheap guess away from the password itself).
    pub fn identity(&self) -> Vec<u8> {
        serde_json::to_vec(&[self.username.as_str(), &self.nick_name, &self.head_img])
            .unwrap_or_default()
    }
}

/// Checks a sign-up and charges it to the address's budget, before anything
/// is stored or hashed (and before its idempotency key is claimed).
pub async fn check_registration(
    ctx: &Context,
    req: RegisterRequest,
    origin: &Origin,
) -> AppResult<Registration> {
    let username = Username::parse(&req.username)?;
    let password = Password::parse(&req.password)?;
    let nick_name = match req.nick_name.as_deref() {
        Some(n) => NickName::parse(n)?.into_inner(),
        None => username.as_str().to_string(),
    };
    ctx.content_filters.refuse_matching(
        if req.nick_name.is_some() {
            "nickName"
        } else {
            "username"
        },
        &nick_name,
    )?;
    let head_img = HeadImg::parse(req.head_img.as_deref().unwrap_or(""))?.into_inner();
    enforce(
        ctx,
        &rate_limits::signup_budgets(ctx.settings.rate_limits.as_ref(), origin.addr.as_deref()),
    )
    .await?;
    Ok(Registration {
        username,
        password,
        nick_name,
        head_img,
    })
}

#[tracing::instrument(skip_all, fields(username = %reg.username.as_str()))]
pub async fn register(
    ctx: &Context,
    reg: Registration,
    reserved: Option<super::idempotency::Reservation>,
) -> AppResult<UserCard> {
    let Registration {
        username,
        password,
        nick_name: nick,
        head_img: head,
    } = reg;
    let now = now_ms();
    let hash = hash_password(ctx, password.expose().to_string()).await?;
    let user = UserDoc {
        nick_name: nick,
        head_img: head,
        ..UserDoc::new(0, username.as_str(), hash, now)
    };
    match insert_user(ctx, &user, reserved).await {
        Ok(user) => Ok(user.card()),
        Err(StoreError::Duplicate(_)) => Err(AppError::Conflict(format!(
            "username {} is taken",
            user.username
        ))),
        Err(e) => Err(e.into()),
    }
}

/// Stores `user` under a fresh uid, or the one a retried sign-up reserved
/// (then an earlier try may have made it: the same name under that uid).
async fn insert_user(
    ctx: &Context,
    user: &UserDoc,
    reserved: Option<super::idempotency::Reservation>,
) -> crate::store::StoreResult<UserDoc> {
    let earlier = |uid: i64| async move {
        Ok(ctx
            .docs
            .users_by_ids(&[uid])
            .await?
            .pop()
            .filter(|u| u.username == user.username))
    };
    insert_reserved(
        reserved,
        |uid| {
            let user = UserDoc {
                uid,
                ..user.clone()
            };
            async move { ctx.docs.insert_user(&user).await.map(|()| user) }
        },
        earlier,
    )
    .await
}

#[tracing::instrument(skip(ctx, req, origin), fields(username = %req.username))]
pub async fn login(ctx: &Context, req: LoginRequest, origin: &Origin) -> AppResult<Session> {
    let user = check_password(ctx, &req.username, req.password, origin).await?;
    // Said only to whoever knows the password: a stranger learns nothing.
    if user.is_suspended(now_ms()) {
        return Err(AppError::Suspended {
            until: (user.suspended_until != BANNED).then_some(user.suspended_until),
            strike: super::strikes::holding_strike(ctx, user.uid).await,
        });
    }
    let device = device_name(req.device.as_deref(), origin.user_agent.as_deref());
    // Held to the credentials read before the password was checked: a
    // change of them since makes this session worthless, however the two
    // interleave.
    let (token, session) = open_session(ctx, user.uid, device, user.credential_gen).await?;
    let now = now_ms();
    ctx.activity.due(user.uid, now);
    if let Err(e) = ctx.docs.touch_user(user.uid, now).await {
        tracing::warn!(error = %e, "could not record last activity");
    }
    Ok(Session {
        token,
        expires_at: session.expires_at,
        user: user.card(),
    })
}

/// Stores a new session for `uid`, held to `credential_gen`, and returns
/// its token, signing out the oldest sessions past `MAX_SESSIONS`. The
/// caller has checked the credentials: public for seeding tools that make
/// thousands of accounts without paying argon2 for each.
pub async fn open_session(
    ctx: &Context,
    uid: i64,
    device: String,
    credential_gen: i64,
) -> AppResult<(String, SessionDoc)> {
    let now = now_ms();
    let token = new_token(uid)?;
    let hash = token_hash(&token).hex();
    let session = with_fresh_id(|id| {
        let session = SessionDoc {
            device: device.clone(),
            credential_gen,
            ..SessionDoc::new(
                id,
                uid,
                hash.clone(),
                now,
                now + SESSION_TTL_SECS as i64 * 1000,
            )
        };
        async move { ctx.docs.insert_session(&session).await.map(|()| session) }
    })
    .await?;
    close_all_but(ctx, uid, MAX_SESSIONS, None).await?;
    Ok((token, session))
}

/// Signs the session making this request out, its cached copy too.
async fn close_own_session(ctx: &Context, who: &Authed) -> AppResult<()> {
    ctx.docs.delete_sessions(who.uid, &[who.session_id]).await?;
    let key = BlobKey::Session(who.uid, who.token_hash);
    ctx.repair
        .apply_unordered(
            ctx.live.as_ref(),
            Owner::User(who.uid),
            vec![LiveChange::Drop(LiveKey::Blob(key))],
        )
        .await;
    super::stream::events::sessions_ended(ctx, who.uid);
    Ok(())
}

/// Until when the session stays honoured (not signed out, its account's
/// credentials unchanged), asked of the documents; `None` when it is not.
pub async fn honoured_until(ctx: &Context, who: &Authed) -> AppResult<Option<i64>> {
    let (hex, account) = (who.token_hash.hex(), [who.uid]);
    let (found, user) = tokio::try_join!(
        ctx.docs.session_by_token_hash(who.uid, &hex),
        ctx.docs.users_by_ids(&account),
    )?;
    Ok(found
        .filter(|s| {
            s.id == who.session_id && s.expires_at > now_ms() && s.honoured_by(user.first())
        })
        .map(|s| s.expires_at))
}

/// Signs out the session this request was made with.
pub async fn logout(ctx: &Context, who: &Authed) -> AppResult<()> {
    let session = SessionDoc::new(who.session_id, who.uid, who.token_hash.hex(), 0, 0);
    close_sessions(ctx, who.uid, &[session]).await
}

/// The caller's signed-in devices, newest first: those its account still
/// honours.
pub async fn list_sessions(ctx: &Context, who: &Authed, now: i64) -> AppResult<Page<SessionView>> {
    Ok(Page {
        items: sessions_of(ctx, who.uid, Some(who.session_id), now).await?,
        next_cursor: None,
        server_time: now,
    })
}

/// An account's signed-in devices that it still honours at `now`, newest
/// first; `current` marks the asking session, if one asks.
pub async fn sessions_of(
    ctx: &Context,
    uid: i64,
    current: Option<i64>,
    now: i64,
) -> AppResult<Vec<SessionView>> {
    let me = [uid];
    let (sessions, user) = tokio::try_join!(
        ctx.docs.sessions_of_user(uid, MAX_SESSIONS),
        ctx.docs.users_by_ids(&me),
    )?;
    Ok(sessions
        .into_iter()
        .filter(|s| s.expires_at > now && s.honoured_by(user.first()))
        .map(|s| SessionView {
            id: s.id,
            current: Some(s.id) == current,
            device: s.device,
            created_at: s.created_at,
            last_seen_at: s.last_seen_at,
            expires_at: s.expires_at,
        })
        .collect())
}

/// Signs out one of the caller's sessions; 404 for one that is not theirs.
pub async fn sign_out_session(ctx: &Context, who: &Authed, session_id: i64) -> AppResult<()> {
    let sessions = ctx.docs.sessions_of_user(who.uid, 2 * MAX_SESSIONS).await?;
    let Some(found) = sessions.into_iter().find(|s| s.id == session_id) else {
        return Err(AppError::NotFound("session"));
    };
    close_sessions(ctx, who.uid, &[found]).await
}

/// Changes the caller's password and signs out every other session. A
/// wrong old password counts as a failed sign-in.
pub async fn change_password(ctx: &Context, who: &Authed, req: PasswordChange) -> AppResult<()> {
    let new = Password::parse(&req.new_password).map_err(|e| match e {
        AppError::InvalidInput { reason, .. } => AppError::invalid("newPassword", reason),
        other => other,
    })?;
    let user = confirm_password(ctx, who.uid, req.old_password, "oldPassword").await?;
    let hash = hash_password(ctx, new.expose().to_string()).await?;
    // The session making the change is held to the new credentials before
    // the account moves to them, so it is honoured throughout; every other
    // one, and any being opened with the old password, is not.
    let gen = next_credential_gen(&user);
    ctx.docs
        .set_session_credential_gen(who.uid, who.session_id, gen)
        .await?;
    let changed = ctx
        .docs
        .set_password_hash(who.uid, &hash, user.credential_gen, gen)
        .await;
    if !matches!(changed, Ok(true)) {
        // Another change of credentials came in between (two changes with
        // the same old password at once: the first wins, so whoever knew
        // only the old one cannot undo the owner's change by racing it), or
        // the write failed. Either way this session may not keep the
        // generation it was moved to: it is moved back, and signed out with
        // its cached copy, in case either fails.
        let back = ctx
            .docs
            .set_session_credential_gen(who.uid, who.session_id, user.credential_gen)
            .await;
        let closed = close_own_session(ctx, who).await;
        changed?;
        back?;
        closed?;
        credentials_changed(ctx, who.uid).await;
        return Err(AppError::Conflict(
            "the password was changed meanwhile; sign in with the new one".into(),
        ));
    }
    credentials_changed(ctx, who.uid).await;
    tidy_sessions(ctx, who.uid, Some(who.session_id)).await;
    Ok(())
}

/// Checks the signed-in account's password again before a change that
/// needs it. A wrong one is a failed sign-in, and 403: the request is well
/// formed (a 400 would tell a client to fix its input), the caller is just
/// not allowed to make the change.
async fn confirm_password(
    ctx: &Context,
    uid: i64,
    password: String,
    field: &str,
) -> AppResult<UserDoc> {
    let wrong = || AppError::Forbidden("the password is not right");
    Password::check_length(&password).map_err(|_| {
        AppError::invalid(
            field,
            format!("must be at most {} characters", Password::MAX_CHARS),
        )
    })?;
    let user = me_doc(ctx, uid).await?;
    let limits = ctx.settings.rate_limits.as_ref();
    enforce(
        ctx,
        &rate_limits::login_failure_budget(limits, &user.username),
    )
    .await?;
    if !verify_password(ctx, password, user.password_hash.clone()).await? {
        return Err(wrong());
    }
    forgive_failure(ctx, &user.username).await;
    Ok(user)
}

/// Deletes the caller's account. From the answer on, nobody can sign in
/// with it, its sessions are gone, its username is free, and what it did is
/// erased from every read (`service::erasure`). A wrong password counts as
/// a failed sign-in and changes nothing.
pub async fn delete_account(ctx: &Context, who: &Authed, req: AccountDeletion) -> AppResult<()> {
    confirm_password(ctx, who.uid, req.password, "password").await?;
    // The one write the answer waits for. From it on the account has no
    // card, which every read of its posts, comments and likes goes by
    // (`assemble`), honours no session (`SessionDoc::honoured_by`), and is
    // marked for the sweep to finish erasing, whatever fails after.
    ctx.docs.erase_user(who.uid).await?;
    credentials_changed(ctx, who.uid).await;
    tidy_sessions(ctx, who.uid, None).await;
    // Up to MOMENTS_ERASE_IN_REQUEST of its records are erased before the
    // answer, so that most accounts are gone whole by then; more go on in
    // the background.
    let budget = ctx.settings.erase_in_request;
    let done = if budget == 0 {
        Ok(false)
    } else {
        super::erasure::erase_traces(ctx, who.uid, budget).await
    };
    match done {
        Ok(true) => {}
        Ok(false) => super::erasure::finish_in_background(ctx, who.uid),
        Err(e) => {
            tracing::warn!(uid = who.uid, error = %e, "erasing goes on in the background");
            super::erasure::finish_in_background(ctx, who.uid);
        }
    }
    Ok(())
}

/// Who a bearer token signs in, with this request's rate limits checked in
/// the same round trip as the session lookup. An unknown, expired or
/// signed-out token is an error, never silently anonymous.
pub async fn authenticate(
    ctx: &Context,
    token: &str,
    traffic: Traffic,
    origin: &Origin,
) -> AppResult<Authed> {
    let (authed, _) =
        authenticate_with(ctx, token, traffic, origin, |_| LiveRead::default()).await?;
    Ok(authed)
}

/// `authenticate`, with a live read the request makes next (`also`, of the
/// uid the token names) sent in the same round trip: its answer comes back
/// only once the session is verified, and `None` when the live store did
/// not answer.
pub async fn authenticate_with(
    ctx: &Context,
    token: &str,
    traffic: Traffic,
    origin: &Origin,
    also: impl FnOnce(i64) -> LiveRead,
) -> AppResult<(Authed, Option<crate::store::LiveAnswer>)> {
    if token.is_empty() || token.len() > 128 {
        return Err(AppError::Unauthorized("invalid token"));
    }
    let (uid, hash) = parse_token(token)?;
    let also = also(uid);
    let budgets = rate_limits::request_budgets(
        ctx.settings.rate_limits.as_ref(),
        traffic,
        Some(uid),
        origin.addr.as_deref(),
    );
    let key = BlobKey::Session(uid, hash);
    let owner = Owner::User(uid);
    // The account's card beside the session, in the same round trip: a
    // cached session is honoured only while the card (gone with an erased
    // account, dropped by every change of credentials) says so.
    let (answer, also) =
        match session_and_card(ctx, uid, key, rate_limits::checks(&budgets), also).await {
            Ok((a, also)) => (Some(a), Some(also)),
            Err(e) => {
                tracing::warn!(error = %e, "session cache unavailable; reading the documents");
                (None, None)
            }
        };
    // The account's budget was counted on the uid the token names, which
    // anyone can write: it is judged only once the session is verified,
    // and a request that is not the account's gives its count back. The
    // address's budget is judged first, before any document is read.
    let not_theirs = |budgets: &[Budget]| {
        let refunds = rate_limits::refunds(budgets);
        if refunds.is_empty() {
            return;
        }
        let live = ctx.live.clone();
        tokio::spawn(async move {
            let read = LiveRead {
                limits: refunds,
                ..Default::default()
            };
            let _ = live.read(&read).await;
        });
    };
    if let Some(a) = &answer {
        if let Err(e) = rate_limits::judge_where(&budgets, &a.limits, false) {
            not_theirs(&budgets);
            return Err(e);
        }
    }
    // A user whose last live update failed (a sign-out, say) may have stale
    // cache entries until the repair task drops them.
    let counts = answer.as_ref().map(|a| a.limits.clone());
    let trusted = answer.filter(|_| !ctx.repair.is_pending(owner));
    let cached = trusted.as_ref().and_then(|a| {
        let session = a.blobs.first().cloned().flatten()?;
        let card: CachedCard = from_json(a.blobs.get(1).cloned().flatten()?.as_str()).ok()?;
        let s: SessionDoc = from_json(&session).ok()?;
        s.honoured_by_card(&card).then_some(s)
    });
    let mut lookups = crate::metrics::LiveLookups::default();
    match (&cached, &trusted) {
        (Some(_), _) => lookups.hit(key.kind()),
        (None, Some(_)) => {
            lookups.miss(key.kind());
            lookups.rebuilt(key.kind());
        }
        // The live store failed, or this user awaits repair.
        (None, None) => lookups.rebuilt(key.kind()),
    }
    lookups.record();
    let session: Option<SessionDoc> = match cached {
        Some(s) => Some(s),
        None => {
            // The account is read beside the session: a session is honoured
            // only while its account's credentials have not changed since it
            // was opened, and is cached only once found so.
            let (hex, account) = (hash.hex(), [uid]);
            let (found, user) = tokio::try_join!(
                ctx.docs.session_by_token_hash(uid, &hex),
                ctx.docs.users_by_ids(&account),
            )?;
            let found = match found {
                Some(s) if !s.honoured_by(user.first()) => {
                    // Opened before a change of credentials that could not
                    // list it yet: gone now, on this first use.
                    let docs = ctx.docs.clone();
                    tokio::spawn(async move {
                        if let Err(e) = docs.delete_sessions(uid, &[s.id]).await {
                            tracing::debug!(error = %e, "could not delete a dishonoured session");
                        }
                    });
                    None
                }
                found => found,
            };
            if let (Some(s), Some(a), Some(u)) = (&found, &trusted, user.first()) {
                // Written only if no sign-out or change of credentials moved
                // the user's generation since it was read, before the
                // documents were.
                let gen = a.gens.first().copied();
                let fill = LiveFill {
                    blobs: vec![
                        (key, to_json(s)?, gen),
                        (BlobKey::Card(uid), to_json(&u.cached_card())?, gen),
                    ],
                    ..Default::default()
                };
                let live = ctx.live.clone();
                tokio::spawn(async move {
                    if let Err(e) = live.fill(&fill).await {
                        tracing::debug!(error = %e, "could not cache a session");
                    }
                });
            }
            found
        }
    };
    let now = now_ms();
    let Some(session) = session.filter(|s| s.uid == uid && s.expires_at > now) else {
        if counts.is_some() {
            not_theirs(&budgets);
        }
        return Err(AppError::Unauthorized("invalid or expired token"));
    };
    if let Some(counts) = &counts {
        rate_limits::judge_where(&budgets, counts, true)?;
    }
    note_activity(ctx, uid, session.id, now);
    let authed = Authed {
        uid,
        session_id: session.id,
        token_hash: hash,
    };
    Ok((authed, also))
}

/// The cached session and the account's card, with the account's
/// generation and the rate-limit counters, in one round trip: only the
/// generation and the counters when this instance holds copies of both at
/// a generation that turns out current (`near_cache`), a second round trip
/// for the values when it has moved.
async fn session_and_card(
    ctx: &Context,
    uid: i64,
    session: BlobKey,
    limits: Vec<crate::store::LimitCheck>,
    also: LiveRead,
) -> crate::store::StoreResult<(crate::store::LiveAnswer, crate::store::LiveAnswer)> {
    use super::read::near_cache::NearValue;
    let owner = Owner::User(uid);
    let keys = [session, BlobKey::Card(uid)];
    let usable = ctx.near.is_on() && !ctx.repair.is_pending(owner);
    let copies = ctx.near.get(owner).filter(|_| usable).and_then(|c| {
        let [s, card] = keys.map(|k| c.blob(k).cloned());
        Some((c.generation, [s?, card?]))
    });
    let mine = if copies.is_some() { 0 } else { keys.len() };
    let mut read = LiveRead {
        blobs: if copies.is_some() {
            Vec::new()
        } else {
            keys.to_vec()
        },
        gens: vec![owner],
        limits,
        ..Default::default()
    };
    read.blobs.extend(also.blobs);
    read.sets = also.sets;
    read.gens.extend(also.gens);
    let mut answer = ctx.live.read(&read).await?;
    let also = crate::store::LiveAnswer {
        blobs: answer.blobs.split_off(mine.min(answer.blobs.len())),
        sets: std::mem::take(&mut answer.sets),
        gens: answer.gens.split_off(1.min(answer.gens.len())),
        limits: Vec::new(),
    };
    let gen = answer.gens.first().copied().unwrap_or_default();
    match copies {
        Some((g, [s, c])) if g == gen => {
            answer.blobs = vec![Some(s.to_string()), Some(c.to_string())];
            return Ok((answer, also));
        }
        Some(_) => {
            let again = LiveRead {
                blobs: keys.to_vec(),
                ..Default::default()
            };
            answer.blobs = ctx.live.read(&again).await?.blobs;
        }
        None => {}
    }
    if usable && gen != 0 {
        for (k, v) in keys.iter().zip(&answer.blobs) {
            if let Some(text) = v {
                ctx.near
                    .put(owner, gen, NearValue::Blob(*k, text.as_str().into()));
            }
        }
    }
    Ok((answer, also))
}

/// The budgets of an anonymous request, by its address: one round trip of
/// its own, since there is no session lookup to ride in.
pub async fn limit_anonymous(ctx: &Context, traffic: Traffic, origin: &Origin) -> AppResult<()> {
    let budgets = rate_limits::request_budgets(
        ctx.settings.rate_limits.as_ref(),
        traffic,
        None,
        origin.addr.as_deref(),
    );
    enforce(ctx, &budgets).await
}

/// How often a user's `lastActiveAt` and a session's `lastSeenAt` are
/// written while they are in use.
const ACTIVITY_EVERY_MS: i64 = 3600 * 1000;

/// Records that `uid` is active (for fan-out) and its session in use, at
/// most once an hour per instance each and off the request's path.
fn note_activity(ctx: &Context, uid: i64, session_id: i64, now: i64) {
    let user_due = ctx.activity.due(uid, now);
    let session_due = ctx.session_activity.due(session_id, now);
    if !user_due && !session_due {
        return;
    }
    let docs = ctx.docs.clone();
    tokio::spawn(async move {
        if user_due {
            if let Err(e) = docs.touch_user(uid, now).await {
                tracing::debug!(uid, error = %e, "could not record activity");
            }
        }
        if session_due {
            if let Err(e) = docs.touch_session(uid, session_id, now).await {
                tracing::debug!(session_id, error = %e, "could not record a session's use");
            }
        }
    });
}

/// Usernames of `uids`, one read for all of them; an erased account has
/// none.
pub async fn usernames_of(
    ctx: &Context,
    uids: &[i64],
) -> AppResult<std::collections::HashMap<i64, String>> {
    let mut wanted = uids.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    Ok(ctx
        .docs
        .users_by_ids(&wanted)
        .await?
        .into_iter()
        .filter(|u| !u.is_erased())
        .map(|u| (u.uid, u.username))
        .collect())
}

pub async fn me(ctx: &Context, uid: i64) -> AppResult<Me> {
    me_doc(ctx, uid).await.map(Me::from)
}

#[tracing::instrument(skip(ctx, patch))]
pub async fn update_me(ctx: &Context, uid: i64, patch: ProfilePatch) -> AppResult<Me> {
    let nick = patch
        .nick_name
        .as_deref()
        .map(NickName::parse)
        .transpose()?
        .map(NickName::into_inner);
    if let Some(n) = &nick {
        ctx.content_filters.refuse_matching("nickName", n)?;
    }
    let head = patch
        .head_img
        .as_deref()
        .map(HeadImg::parse)
        .transpose()?
        .map(HeadImg::into_inner);
    let was_findable = match patch.findable {
        Some(_) => me_doc(ctx, uid).await?.findable,
        None => true,
    };
    let user = ctx
        .docs
        .update_profile(
            uid,
            ProfileChange {
                nick_name: nick.as_deref(),
                head_img: head.as_deref(),
                album_window: patch.album_window,
                findable: patch.findable,
            },
        )
        .await?
        .ok_or(AppError::Unauthorized("account no longer exists"))?;
    ctx.repair
        .apply_unordered(
            ctx.live.as_ref(),
            Owner::User(uid),
            vec![LiveChange::Drop(LiveKey::Blob(BlobKey::Card(uid)))],
        )
        .await;
    // Only a change: indexing an author's posts again is work in
    // proportion to them, not to be had for the asking.
    if patch.findable.is_some_and(|f| f != was_findable) {
        super::search::reindex_author(ctx, uid);
    }
    Ok(user.into())
}

/// Makes sure the configured admin exists with the configured password and
/// the admin role: created, or its password brought in line (which signs
/// out its sessions), the same after any number of runs. An existing
/// account without the role is never promoted: anyone could have
/// registered that name first.
pub async fn bootstrap_admin(ctx: &Context, username: &str, password: &str) -> AppResult<i64> {
    let name = Username::parse(username).map_err(|e| match e {
        AppError::InvalidInput { reason, .. } => {
            AppError::invalid("MOMENTS_ADMIN_USERNAME", reason)
        }
        other => other,
    })?;
    let pw = Password::parse(password).map_err(|e| match e {
        AppError::InvalidInput { reason, .. } => {
            AppError::invalid("MOMENTS_ADMIN_PASSWORD", reason)
        }
        other => other,
    })?;
    let existing = ctx.docs.user_by_username(name.as_str()).await?;
    let user = match existing {
        Some(user) => user,
        None => {
            let hash = hash_password(ctx, pw.expose().to_string()).await?;
            let now = now_ms();
            let user = UserDoc {
                roles: vec!["admin".into()],
                ..UserDoc::new(0, name.as_str(), hash.clone(), now)
            };
            match insert_user(ctx, &user, None).await {
                Ok(user) => return Ok(user.uid),
                // Another instance created it a moment ago: check that one.
                Err(StoreError::Duplicate(_)) => ctx
                    .docs
                    .user_by_username(name.as_str())
                    .await?
                    .ok_or_else(|| {
                        AppError::Internal(anyhow::anyhow!("the admin account vanished"))
                    })?,
                Err(e) => return Err(e.into()),
            }
        }
    };
    if !user.is_admin() {
        return Err(AppError::invalid(
            "MOMENTS_ADMIN_USERNAME",
            format!(
                "{:?} is an existing account without the admin role, and is not promoted: \
                 choose a name nobody has registered",
                user.username
            ),
        ));
    }
    if !verify_password(ctx, pw.expose().to_string(), user.password_hash.clone()).await? {
        let hash = hash_password(ctx, pw.expose().to_string()).await?;
        // A rotation of a leaked admin password must not lose to whoever
        // holds the old one: a compare-and-set lost to another change is
        // made again on a fresh read, a few times.
        let mut current = user.clone();
        let mut changed = false;
        for _ in 0..5 {
            changed = ctx
                .docs
                .set_password_hash(
                    current.uid,
                    &hash,
                    current.credential_gen,
                    next_credential_gen(&current),
                )
                .await?;
            if changed {
                break;
            }
            match ctx.docs.users_by_ids(&[current.uid]).await?.pop() {
                Some(fresh) if !fresh.is_erased() => current = fresh,
                _ => break,
            }
        }
        if !changed {
            // Starting matters more: the next start tries again.
            tracing::warn!(
                uid = user.uid,
                "the admin password could not be set: it kept changing meanwhile"
            );
            return Ok(user.uid);
        }
        credentials_changed(ctx, user.uid).await;
        tidy_sessions(ctx, user.uid, None).await;
        tracing::info!(
            uid = user.uid,
            "admin password changed; its sessions are signed out"
        );
    }
    Ok(user.uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_name_their_user_and_only_well_formed_ones_parse() {
        let t = new_token(1_247_009_344_279_936).unwrap();
        let (uid, hash) = parse_token(&t).unwrap();
        assert_eq!(uid, 1_247_009_344_279_936);
        assert_eq!(hash, token_hash(&t));
        assert_eq!(
            super::super::credentials::parse_hex_hash(&hash.hex()),
            Some(hash)
        );
        let secret = "a".repeat(64);
        for bad in [
            "".to_string(),
            "nodot".to_string(),
            format!("0.{secret}"),
            format!("-5.{secret}"),
            format!("12.{}", "a".repeat(63)),
            format!("12.{}", "g".repeat(64)),
        ] {
            assert!(parse_token(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn device_names_are_bounded_and_printable() {
        assert_eq!(device_name(Some("  "), Some("curl/8")), "curl/8");
        assert_eq!(device_name(Some("Pixel\u{7}"), None), "Pixel");
        assert_eq!(
            device_name(None, Some(&"x".repeat(500))).chars().count(),
            128
        );
        assert_eq!(device_name(None, None), "");
    }
}
