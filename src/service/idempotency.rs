//! Idempotent retries, after the IETF draft "The Idempotency-Key HTTP
//! Header Field": a client that did not hear the answer to a create sends
//! it again with the same key, and gets the first answer (same status, same
//! ids) instead of a second post.
//!
//! - The first request with a key claims it in the documents before doing
//!   anything; its answer is recorded when it succeeds. Keys live 24 h.
//! - The same key with the same request replays the recorded answer; with a
//!   different request it is 422; while the first still runs, 409.
//! - A request that fails gives its key back, so a retry runs it again.
//!   Each try makes its thing under an id minted when it claimed the key,
//!   and a retry first looks under the ids of the tries before it: if a
//!   failure came after the insert landed (a read-back refused in a
//!   failover, an answer lost), the retry finds that thing and answers it
//!   instead of making a second.
//! - Keys are scoped: to the account, or to the client address for sign-ups.

use sha2::{Digest, Sha256};

use super::Context;
use crate::error::{AppError, AppResult};
use crate::ids::now_ms;
use crate::store::{IdempotencyDoc, KeyClaim};

/// How long a key is remembered.
pub const KEEP_MS: i64 = 24 * 3600 * 1000;
/// A claim unfinished for this long belongs to a request whose instance
/// died; a retry may take it over.
const STALE_MS: i64 = 5 * 60 * 1000;
/// Longest key accepted (UUIDs are 36; the draft sets no bound, we must).
pub const MAX_KEY_CHARS: usize = 255;

/// A claimed key: the request behind it runs, then `finish` or `release`.
pub struct Ticket {
    id: String,
    started_at: i64,
    pub reservation: Reservation,
}

/// Where a create behind a key makes its thing, and where earlier tries
/// of it may have (`service::insert_reserved`).
#[derive(Debug, Clone)]
pub struct Reservation {
    pub id: i64,
    pub earlier: Vec<i64>,
}

pub enum Claim {
    /// Nobody used the key yet: run the request.
    Run(Ticket),
    /// The key's first request finished with this answer.
    Replay { status: u16, body: String },
}

/// A key as a client sends it: 1 to 255 visible ASCII characters, bare or
/// as the draft's quoted structured-field string (`"8e03978e-..."`).
pub fn parse_key(raw: &str) -> AppResult<String> {
    let key = raw
        .strip_prefix('"')
        .and_then(|k| k.strip_suffix('"'))
        .unwrap_or(raw);
    if key.is_empty()
        || key.len() > MAX_KEY_CHARS
        || !key.bytes().all(|b| b.is_ascii_graphic() && b != b'"')
    {
        return Err(AppError::invalid(
            "Idempotency-Key",
            "must be 1 to 255 visible ASCII characters, such as a UUID",
        ));
    }
    Ok(key.to_string())
}

/// Hex SHA-256 of `parts`, each length-prefixed so no two lists collide.
fn digest(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_be_bytes());
        h.update(p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// What makes two requests "the same" for a key.
pub fn fingerprint(method: &str, path: &str, query: &str, body: &[u8]) -> String {
    digest(&[method.as_bytes(), path.as_bytes(), query.as_bytes(), body])
}

pub async fn claim(ctx: &Context, scope: &str, key: &str, fingerprint: String) -> AppResult<Claim> {
    let now = now_ms();
    let record = IdempotencyDoc::new(
        format!("{scope}:{}", digest(&[key.as_bytes()])),
        fingerprint,
        now,
        now + KEEP_MS,
        crate::ids::next_id(),
    );
    let first = match ctx
        .docs
        .claim_idempotency_key(&record, now, now - STALE_MS)
        .await?
    {
        KeyClaim::Won {
            reserved_id,
            earlier,
        } => {
            return Ok(Claim::Run(Ticket {
                id: record.id,
                started_at: now,
                reservation: Reservation {
                    id: reserved_id,
                    earlier,
                },
            }))
        }
        KeyClaim::Held(first) => first,
    };
    if first.fingerprint != record.fingerprint {
        return Err(AppError::KeyReused);
    }
    match (first.status, first.body) {
        (Some(status), Some(body)) => Ok(Claim::Replay { status, body }),
        _ => Err(AppError::Conflict(
            "a request with this Idempotency-Key is still being processed; retry shortly".into(),
        )),
    }
}

/// Records the answer for replays. If that fails the thing is made but
/// not remembered: a retry within `STALE_MS` gets 409, later it runs again.
pub async fn finish(ctx: &Context, ticket: Ticket, status: u16, body: &str) {
    if let Err(e) = ctx
        .docs
        .complete_idempotency_key(&ticket.id, ticket.started_at, status, body)
        .await
    {
        tracing::warn!(error = %e, "could not record an idempotent answer; a retry may not replay it");
    }
}

/// Gives the key back after a failed request.
pub async fn release(ctx: &Context, ticket: Ticket) {
    if let Err(e) = ctx
        .docs
        .release_idempotency_key(&ticket.id, ticket.started_at)
        .await
    {
        tracing::warn!(error = %e, "could not release an idempotency key; retries get 409 for a while");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_bounded_visible_ascii_bare_or_quoted() {
        assert_eq!(parse_key("8e03978e-40d5").unwrap(), "8e03978e-40d5");
        assert_eq!(parse_key("\"8e03978e-40d5\"").unwrap(), "8e03978e-40d5");
        for bad in [
            "",
            "\"\"",
            "has space",
            "tab\there",
            "ключ",
            &"k".repeat(256),
        ] {
            assert!(parse_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fingerprints_tell_requests_apart() {
        let a = fingerprint("POST", "/api/v1/posts", "", b"{\"content\":\"a\"}");
        assert_eq!(
            a,
            fingerprint("POST", "/api/v1/posts", "", b"{\"content\":\"a\"}")
        );
        assert_ne!(
            a,
            fingerprint("POST", "/api/v1/posts", "", b"{\"content\":\"b\"}")
        );
        assert_ne!(
            a,
            fingerprint("POST", "/api/v1/posts", "lang=en", b"{\"content\":\"a\"}")
        );
        assert_ne!(
            fingerprint("POST", "/a", "b", b""),
            fingerprint("POST", "/ab", "", b"")
        );
    }
}
