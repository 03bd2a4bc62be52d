//! The Redis adapters: the live state (`live.rs`, the `LiveStore` port)
//! and its part in live updates (`event_log.rs`, the `StreamStore` port),
//! over one connection, to a single Redis or a Redis Cluster (`conn.rs`).

mod conn;
mod event_log;
mod live;

pub use conn::is_cluster_url;
pub use live::{RedisLive, HOME_TTL_SECS};
