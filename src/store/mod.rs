//! The ports the services talk to, and the records that cross them.
//!
//! `DocStore` is the truth (MongoDB's role): users, posts, comments, likes,
//! device models. `LiveStore` is derived state (Redis's role): sets of ids,
//! cached bodies and cards, sessions. Every live key can be rebuilt from the
//! documents, so the live port offers a few generic, batchable operations
//! and the services decide what to rebuild from where.

pub mod embedded;
pub mod faults;
pub mod live_checks;
pub mod metered;
pub mod mongo;
pub mod redis;

mod documents;
mod live;

pub use documents::*;
pub use live::*;

use serde::{Deserialize, Deserializer};

// The stores' error lives beside the API's (`crate::error`), which maps
// it: so neither error module depends on the stores or the domain.
pub use crate::error::{StoreError, StoreResult};

/// Some wire servers store a `$set` boolean as 0/1; read either.
pub(crate) fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum B {
        Bool(bool),
        Int(i64),
        Float(f64),
    }
    Ok(match Option::<B>::deserialize(d)? {
        None => false,
        Some(B::Bool(b)) => b,
        Some(B::Int(i)) => i != 0,
        Some(B::Float(f)) => f != 0.0,
    })
}
