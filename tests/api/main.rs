//! API tests: the real app over real HTTP, on real MongoDB-wire and Redis
//! servers (started by scripts/test.sh).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod account_deletion;
mod accounts;
mod authorization;
mod blocks;
mod comments;
mod devices;
mod fan_outs;
mod feed;
mod full_pages;
mod helpers;
mod idempotency;
mod instances;
mod likes;
mod live_state;
mod metrics;
mod notifications;
mod ops;
mod posts;
mod privacy;
mod rate_limits;
mod repair;
mod sessions;
mod shares;
mod social;
mod views;
mod web_client;
