//! The ports the services talk to, and the records that cross them.
//!
//! `DocStore` is the truth (MongoDB's role): users, posts, comments, likes,
//! device models. `LiveStore` is derived state (Redis's role): sets of ids,
//! cached bodies and cards, sessions. Every live key can be rebuilt from the
//! documents, so the live port offers a few generic, batchable operations
//! and the services decide what to rebuild from where. `MediaStore` holds
//! the bytes of uploaded pictures (S3's role), which the documents
//! describe.

pub mod embedded;
pub mod faults;
pub mod live_checks;
pub mod media_cache;
pub mod metered;
pub mod mongo;
pub mod objects;
pub mod opensearch;
pub mod redis;
pub mod search;

mod documents;
mod event_log;
mod live;
mod media;

pub use documents::*;
pub use event_log::*;
pub use live::*;
pub use media::*;

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

/// Panics unless the `//!` header of `mod_rs` (a folder's `mod.rs`) names
/// every other module in `src/store/{folder}` in backquotes: the headers
/// are where a newcomer looks first, so they must not fall behind.
#[cfg(test)]
pub(crate) fn assert_header_names_every_file(mod_rs: &str, folder: &str) {
    let header: String = mod_rs
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .collect::<Vec<_>>()
        .join(" ")
        .replace("//! ", "");
    let dir = format!("{}/src/store/{folder}", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(module) = name.strip_suffix(".rs").filter(|m| *m != "mod") else {
            continue;
        };
        assert!(
            header.contains(&format!("`{module}`")),
            "the header of {folder}/mod.rs does not name {module}"
        );
    }
}
