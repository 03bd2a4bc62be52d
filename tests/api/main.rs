//! API tests: the real app over real HTTP. On the embedded default unless
//! `MOMENTS_TEST_BACKEND=stores`, then on the MongoDB-wire server and Redis
//! (or Redis Cluster) that `MOMENTS_TEST_MONGODB_URI` and
//! `MOMENTS_TEST_REDIS_URL` name (scripts/test.sh starts them and runs this
//! suite on each: embedded, MongoDB + Redis, + Redis Cluster, FerretDB).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod account_deletion;
mod accounts;
mod authorization;
mod blocks;
mod comments;
mod devices;
mod exports;
mod fan_outs;
mod feed;
mod full_pages;
mod helpers;
mod idempotency;
mod imports;
mod instances;
mod likes;
mod live_state;
mod media;
mod metrics;
#[path = "../support/multipart.rs"]
mod multipart;
mod notifications;
mod ops;
mod posts;
mod privacy;
#[path = "../support/proxy.rs"]
mod proxy;
mod rate_limits;
mod repair;
mod reports;
mod search;
mod sessions;
mod shares;
mod social;
#[path = "../support/sse.rs"]
mod sse;
mod stream;
mod strikes;
mod views;
mod web_client;
