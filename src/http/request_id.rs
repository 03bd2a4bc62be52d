//! Request ids: taken from `X-Request-Id` when a client or proxy sent a
//! sane one, made up otherwise. Every response carries it back, every log
//! line of the request carries it (the request's span), and a problem+json
//! answer names it as its `instance`, so a user's report leads to its logs.

use actix_web::http::header::{HeaderName, HeaderValue};

pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

tokio::task_local! {
    static CURRENT: String;
}

/// The id a request goes by: the one it brought if it is 1 to 64 of
/// `A-Z a-z 0-9 - _ . :`, else a new one (16 random hex digits).
pub fn id_for(given: Option<&HeaderValue>) -> String {
    let sane = given
        .and_then(|v| v.to_str().ok())
        .filter(|s| (1..=64).contains(&s.len()))
        .filter(|s| {
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
        });
    match sane {
        Some(s) => s.to_string(),
        None => {
            let mut b = [0u8; 8];
            let _ = getrandom::getrandom(&mut b);
            b.iter().map(|x| format!("{x:02x}")).collect()
        }
    }
}

/// Runs `fut` as the request `id`.
pub async fn scope<F: std::future::Future>(id: String, fut: F) -> F::Output {
    CURRENT.scope(id, fut).await
}

/// The id of the request being answered, if any.
pub fn current() -> Option<String> {
    CURRENT.try_with(|id| id.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sane_ids_are_kept_and_others_replaced() {
        let v = |s: &str| HeaderValue::from_str(s).unwrap();
        assert_eq!(id_for(Some(&v("abc-123_x.y:z"))), "abc-123_x.y:z");
        for bad in ["", "has space", "semi;colon", &"x".repeat(65)] {
            let made = id_for(Some(&v(bad)));
            assert_ne!(made, bad);
            assert_eq!(made.len(), 16);
        }
        assert_eq!(id_for(None).len(), 16);
        assert_ne!(id_for(None), id_for(None));
    }
}
