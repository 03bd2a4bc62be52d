//! What the tests that run the real binary share: a free port, waiting
//! for it to be ready, a JSON call, an account.
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::Child;
use std::time::Duration;

use serde_json::{json, Value};

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub async fn wait_ready(client: &reqwest::Client, base: &str, child: &mut Child) {
    for _ in 0..200 {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await {
            if r.status().is_success() {
                return;
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("moments exited early: {status}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("moments did not become ready");
}

pub async fn call(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = client.request(method, url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Registers and signs in `name`; returns (uid, token).
pub async fn account(client: &reqwest::Client, api: &str, name: &str) -> (i64, String) {
    let body = json!({"username": name, "password": "password-123"});
    let (s, card) = call(
        client,
        reqwest::Method::POST,
        format!("{api}/users"),
        None,
        Some(body.clone()),
    )
    .await;
    assert_eq!(s, 201, "{card}");
    let (s, session) = call(
        client,
        reqwest::Method::POST,
        format!("{api}/sessions"),
        None,
        Some(body),
    )
    .await;
    assert_eq!(s, 201, "{session}");
    (
        card["uid"].as_i64().unwrap(),
        session["token"].as_str().unwrap().to_string(),
    )
}
