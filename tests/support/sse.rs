//! A Server-Sent Events reader over a real HTTP response: what the tests of
//! live updates read streams with.
#![allow(dead_code)]

use std::time::Duration;

use serde_json::Value;

/// How long a test waits for an event that must come.
const PATIENCE: Duration = Duration::from_secs(20);

#[derive(Debug, Clone)]
pub struct Event {
    pub id: Option<String>,
    pub name: String,
    pub data: Value,
}

pub struct Sse {
    resp: reqwest::Response,
    buf: String,
    /// The bytes of a character a read split, until the rest comes.
    partial: Vec<u8>,
    /// The `id:` of the last event read: what a client resumes from.
    pub last_id: Option<String>,
    /// Every `retry:` read, in order.
    pub retries: Vec<u64>,
    /// Heartbeat (comment) lines read.
    pub heartbeats: usize,
}

/// Opens `url` (a full URL with its query) as a stream: the stream, or the
/// status and body of a refusal.
pub async fn open(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    last_event_id: Option<&str>,
) -> Result<Sse, (u16, Value, reqwest::header::HeaderMap)> {
    let mut req = client.get(url).header("accept", "text/event-stream");
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id);
    }
    let resp = req.send().await.expect("request");
    if resp.status() != 200 {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.json().await.unwrap_or(Value::Null);
        return Err((status, body, headers));
    }
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    Ok(Sse {
        resp,
        buf: String::new(),
        partial: Vec::new(),
        last_id: None,
        retries: Vec::new(),
        heartbeats: 0,
    })
}

impl Sse {
    /// The next event; `None` once the server ended the stream.
    pub async fn next(&mut self) -> Option<Event> {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            if let Some(at) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..at + 2).collect();
                if let Some(e) = self.parse(&block) {
                    return Some(e);
                }
                continue;
            }
            let chunk = tokio::time::timeout_at(deadline, self.resp.chunk())
                .await
                .expect("an event within 20 s (heartbeats aside)")
                .expect("reading the stream");
            match chunk {
                Some(bytes) => {
                    // A read may end inside a character: keep its bytes
                    // for the next.
                    self.partial.extend_from_slice(&bytes);
                    let whole = match std::str::from_utf8(&self.partial) {
                        Ok(_) => self.partial.len(),
                        Err(e) if e.error_len().is_none() => e.valid_up_to(),
                        Err(e) => panic!("the stream is not UTF-8: {e}"),
                    };
                    let rest = self.partial.split_off(whole);
                    let text = std::mem::replace(&mut self.partial, rest);
                    self.buf.push_str(std::str::from_utf8(&text).unwrap());
                }
                None => return None,
            }
        }
    }

    fn parse(&mut self, block: &str) -> Option<Event> {
        let (mut id, mut name, mut data) = (None, None, None);
        for line in block.lines().filter(|l| !l.is_empty()) {
            if let Some(v) = line.strip_prefix("id: ") {
                id = Some(v.to_string());
            } else if let Some(v) = line.strip_prefix("event: ") {
                name = Some(v.to_string());
            } else if let Some(v) = line.strip_prefix("data: ") {
                assert!(data.is_none(), "one data line per event: {block:?}");
                data = Some(serde_json::from_str(v).expect("JSON data"));
            } else if let Some(v) = line.strip_prefix("retry: ") {
                self.retries.push(v.parse().expect("retry in ms"));
            } else if line.starts_with(':') {
                self.heartbeats += 1;
            } else {
                panic!("an unexpected line {line:?} in {block:?}");
            }
        }
        let name = name?;
        assert!(id.is_some(), "every event has an id: {block:?}");
        self.last_id = id.clone();
        Some(Event {
            id,
            name,
            data: data.expect("every event has data"),
        })
    }

    /// The next event, which must be named `name`.
    pub async fn expect(&mut self, name: &str) -> Event {
        let e = self.next().await.expect("the stream goes on");
        assert_eq!(e.name, name, "{e:?}");
        e
    }

    /// The next event named `name` whose data `matches`, reading past others;
    /// returns it and those read past.
    pub async fn until(
        &mut self,
        name: &str,
        matches: impl Fn(&Value) -> bool,
    ) -> (Event, Vec<Event>) {
        let mut past = Vec::new();
        loop {
            let e = self
                .next()
                .await
                .unwrap_or_else(|| panic!("the stream ended before a {name} event; read {past:?}"));
            if e.name == name && matches(&e.data) {
                return (e, past);
            }
            past.push(e);
        }
    }

    /// Reads until the server ends the stream; returns what came first.
    pub async fn read_to_end(&mut self) -> Vec<Event> {
        let mut read = Vec::new();
        while let Some(e) = self.next().await {
            read.push(e);
        }
        read
    }
}
