//! `moments`: a backend for WeChat-Moments / Weibo-style social circles.
//!
//! The crate is split so that each layer only sees the one below it:
//! `http` parses and shapes, `service` holds the use cases, `store` holds the
//! ports and their adapters (MongoDB for the truth, Redis for live state).

pub mod config;
pub mod domain;
pub mod error;
pub mod hashing;
pub mod http;
pub mod ids;
pub mod metrics;
pub mod service;
pub mod startup;
pub mod store;
pub mod telemetry;
