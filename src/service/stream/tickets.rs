//! Single-use tickets for opening a stream where the client cannot send an
//! `Authorization` header (a browser's `EventSource`): a long-lived token
//! never goes into a URL, where logs and histories keep it. A ticket is
//! random, lives a minute (`MOMENTS_STREAM_TICKET_SECS`), opens one stream, and is kept only as its hash.

use serde::{Deserialize, Serialize};

use crate::error::{AppError, AppResult};
use crate::service::accounts::Authed;
use crate::service::Context;
use crate::store::TokenHash;

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Ticket {
    /// For `GET /stream?ticket=`, once, before `expiresAt`.
    pub ticket: String,
    pub expires_at: i64,
}

/// What a ticket stands for: the session that asked for it.
#[derive(Serialize, Deserialize)]
struct Held {
    uid: i64,
    session: i64,
    hash: String,
}

fn key(ticket: &str) -> String {
    crate::service::credentials::token_hash(ticket).hex()
}

pub async fn issue(ctx: &Context, who: &Authed) -> AppResult<Ticket> {
    let mut raw = [0u8; 24];
    getrandom::getrandom(&mut raw).map_err(|e| AppError::Internal(anyhow::anyhow!("{e}")))?;
    let ticket: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let held = Held {
        uid: who.uid,
        session: who.session_id,
        hash: who.token_hash.hex(),
    };
    let value = serde_json::to_string(&held).map_err(|e| AppError::Internal(e.into()))?;
    let ttl_ms = ctx.settings.stream.ticket_secs * 1000;
    let kept = ctx
        .live
        .put_stream_ticket(who.uid, &key(&ticket), &value, ttl_ms)
        .await?;
    if !kept {
        // The in-process table is full of live tickets: refused, rather
        // than make room by dropping someone else's.
        return Err(AppError::Overloaded("stream tickets"));
    }
    Ok(Ticket {
        ticket,
        expires_at: crate::ids::now_ms() + ttl_ms as i64,
    })
}

/// The session a ticket stands for, taking the ticket; 401 for one unknown,
/// used or expired.
pub async fn redeem(ctx: &Context, ticket: &str) -> AppResult<Authed> {
    const REFUSED: AppError = AppError::Unauthorized("unknown, used or expired ticket");
    if ticket.is_empty() || ticket.len() > 128 {
        return Err(REFUSED);
    }
    let Some(value) = ctx.live.take_stream_ticket(&key(ticket)).await? else {
        return Err(REFUSED);
    };
    let held: Held = serde_json::from_str(&value).map_err(|_| REFUSED)?;
    let token_hash = TokenHash::from_hex(&held.hash).ok_or(REFUSED)?;
    Ok(Authed {
        uid: held.uid,
        session_id: held.session,
        token_hash,
    })
}
