//! `GET /metrics`: Prometheus text, for admins on the main port or for
//! anyone on `MOMENTS_METRICS_LISTEN`. Every app of this test binary
//! records into the one process-wide registry, so the assertions look for
//! labels and for counters that grew, never for exact totals.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{
    assert_problem, follow, settle, spawn_app, spawn_app_with, test_settings, TestApp,
};
use moments::config::{Rate, RateLimits};

/// One line of a scrape: `name{label="value",…} value`.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

impl Sample {
    fn has(&self, key: &str, value: &str) -> bool {
        self.labels.iter().any(|(k, v)| k == key && v == value)
    }
}

fn is_name_char(c: char, first: bool) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':' || (!first && c.is_ascii_digit())
}

/// A line in the text exposition format, or why it is not one.
fn parse_line(line: &str) -> Result<Sample, String> {
    let name_end = line
        .char_indices()
        .find(|&(i, c)| !is_name_char(c, i == 0))
        .map(|(i, _)| i)
        .unwrap_or(line.len());
    if name_end == 0 {
        return Err("no metric name".into());
    }
    let name = line[..name_end].to_string();
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        rest = inner;
        loop {
            if let Some(after) = rest.strip_prefix('}') {
                rest = after;
                break;
            }
            let eq = rest.find('=').ok_or("a label without =")?;
            let key = &rest[..eq];
            if key.is_empty()
                || !key
                    .chars()
                    .enumerate()
                    .all(|(i, c)| is_name_char(c, i == 0))
            {
                return Err(format!("bad label name {key:?}"));
            }
            rest = rest[eq + 1..]
                .strip_prefix('"')
                .ok_or("a label value without quotes")?;
            let mut value = String::new();
            let mut chars = rest.char_indices();
            let close = loop {
                match chars.next().ok_or("an unterminated label value")? {
                    (_, '\\') => match chars.next().ok_or("a dangling escape")?.1 {
                        'n' => value.push('\n'),
                        c @ ('\\' | '"') => value.push(c),
                        c => return Err(format!("bad escape \\{c}")),
                    },
                    (i, '"') => break i,
                    (_, c) => value.push(c),
                }
            };
            labels.push((key.to_string(), value));
            rest = &rest[close + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
    }
    let mut fields = rest
        .strip_prefix(' ')
        .ok_or("no space before the value")?
        .split(' ');
    let raw = fields.next().ok_or("no value")?;
    let value = match raw {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().map_err(|_| format!("bad value {v:?}"))?,
    };
    if let Some(timestamp) = fields.next() {
        timestamp
            .parse::<i64>()
            .map_err(|_| format!("bad timestamp {timestamp:?}"))?;
    }
    if fields.next().is_some() {
        return Err("trailing fields".into());
    }
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// Every sample of a scrape; panics naming the first line that is not one.
fn parse(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| parse_line(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect()
}

/// The sum of `name`'s samples that carry all these labels.
fn total(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name && labels.iter().all(|(k, v)| s.has(k, v)))
        .map(|s| s.value)
        .sum()
}

async fn scrape(app: &TestApp, token: &str) -> Vec<Sample> {
    let (s, headers, body) = app
        .call_with(Method::GET, "/metrics", Some(token), &[], None)
        .await;
    assert_eq!(s.as_u16(), 200, "{body}");
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain"),
        "{headers:?}"
    );
    parse(body.as_str().expect("a text scrape"))
}

#[test]
fn the_parser_takes_the_format_and_refuses_what_is_not() {
    let s = parse_line(r#"a_total{route="/p/{id}",q="x\"y"} 3"#).unwrap();
    assert_eq!((s.name.as_str(), s.value), ("a_total", 3.0));
    assert!(s.has("route", "/p/{id}") && s.has("q", "x\"y"));
    assert_eq!(parse_line("up 1 1700000000000").unwrap().value, 1.0);
    assert!(parse_line(r#"b_bucket{le="+Inf"} +Inf"#).is_ok());
    for bad in [
        "{a=\"1\"} 2",
        "a{b=1} 2",
        "a{b=\"1} 2",
        "a 1 2 3",
        "a",
        "a x",
    ] {
        assert!(parse_line(bad).is_err(), "{bad}");
    }
}

#[tokio::test]
async fn the_scrape_on_the_main_port_is_for_admins_only() {
    let app = spawn_app().await;
    let user = app.user("metrics_nosy").await;
    assert_problem(&app.get("/metrics", None).await, 401, "unauthorized");
    assert_problem(
        &app.get("/metrics", Some(&user.token)).await,
        403,
        "forbidden",
    );
    let admin = app.admin().await;
    let samples = scrape(&app, &admin.token).await;
    assert!(!samples.is_empty());
    assert!(
        total(
            &samples,
            "moments_http_requests_total",
            &[("status", "403")]
        ) >= 1.0,
        "the refused scrape is itself counted"
    );
}

#[tokio::test]
async fn the_scrape_shows_routes_store_round_trips_live_state_and_fan_out() {
    let app = spawn_app().await;
    let admin = app.admin().await;
    let author = app.user("metrics_author").await;
    let reader = app.user("metrics_reader").await;
    follow(&app, &reader, &author).await;
    settle(&app).await;
    let before = scrape(&app, &admin.token).await;

    let post = app.text_post(&author, "counted").await;
    settle(&app).await;
    let path = format!("/api/v1/posts/{post}");
    assert_eq!(app.get(&path, Some(&reader.token)).await.0.as_u16(), 200);
    // With the live state gone the next read misses and rebuilds.
    app.lose_live_state().await;
    assert_eq!(app.get(&path, Some(&reader.token)).await.0.as_u16(), 200);
    assert_eq!(app.get("/no/such/thing", None).await.0.as_u16(), 404);
    settle(&app).await;
    let after = scrape(&app, &admin.token).await;

    let grew = |name: &str, labels: &[(&str, &str)]| {
        total(&after, name, labels) - total(&before, name, labels)
    };
    let post_reads = [
        ("route", "/api/v1/posts/{id}"),
        ("method", "GET"),
        ("status", "200"),
    ];
    assert!(grew("moments_http_requests_total", &post_reads) >= 2.0);
    assert!(grew("moments_http_request_duration_seconds_count", &post_reads) >= 2.0);
    assert!(
        after
            .iter()
            .any(|s| s.name == "moments_http_request_duration_seconds_bucket"
                && s.has("route", "/api/v1/posts/{id}")
                && s.has("le", "+Inf")),
        "the latency is a histogram"
    );
    assert!(
        grew(
            "moments_http_requests_total",
            &[("route", "unmatched"), ("status", "404")]
        ) >= 1.0
    );
    // Labels hold route templates, never what a path carried.
    for id in [post, author.uid, reader.uid].map(|i| i.to_string()) {
        for s in &after {
            assert!(
                s.labels.iter().all(|(_, v)| !v.contains(&id)),
                "{id} in {s:?}"
            );
        }
    }
    assert!(
        grew(
            "moments_http_requests_total",
            &[("route", "/no/such/thing")]
        ) == 0.0
    );

    let body_reads = [("port", "PostDocs"), ("op", "posts_by_ids")];
    assert!(grew("moments_store_round_trips_total", &body_reads) >= 1.0);
    assert!(
        grew(
            "moments_store_round_trip_duration_seconds_count",
            &body_reads
        ) >= 1.0
    );
    assert!(
        grew(
            "moments_store_round_trips_total",
            &[("port", "LiveStore"), ("op", "read")]
        ) >= 2.0
    );
    assert!(grew("moments_live_hits_total", &[]) >= 1.0);
    assert!(grew("moments_live_misses_total", &[("key", "post_body")]) >= 1.0);
    assert!(grew("moments_live_rebuilds_total", &[("key", "post_body")]) >= 1.0);

    // The author's own timeline and the reader's.
    assert!(grew("moments_fan_out_timelines_pushed_total", &[]) >= 2.0);
    assert!(after.iter().any(|s| s.name == "moments_fan_outs_in_flight"));
    assert!(after
        .iter()
        .any(|s| s.name == "moments_live_repair_pending"));
    if cfg!(target_os = "linux") {
        assert!(total(&after, "process_resident_memory_bytes", &[]) > 0.0);
        assert!(total(&after, "process_virtual_memory_bytes", &[]) > 0.0);
    }
}

#[tokio::test]
async fn rate_limit_rejections_are_counted_by_the_budget_that_refused() {
    let mut settings = test_settings();
    settings.rate_limits = Some(RateLimits {
        writes: Rate::new(1, 60),
        ..RateLimits::default()
    });
    let app = spawn_app_with(settings).await;
    let admin = app.admin().await;
    let writer = app.user("metrics_eager").await;
    let before = scrape(&app, &admin.token).await;
    app.text_post(&writer, "the one allowed").await;
    let refused = app
        .post(
            "/api/v1/posts",
            Some(&writer.token),
            json!({"category": "TEXT", "content": "one too many"}),
        )
        .await;
    assert_problem(&refused, 429, "rate_limited");
    let after = scrape(&app, &admin.token).await;
    let name = "moments_rate_limit_rejections_total";
    let writes = [("budget", "writes")];
    assert!(total(&after, name, &writes) - total(&before, name, &writes) >= 1.0);
}

#[tokio::test]
async fn a_metrics_listener_serves_without_a_token_and_the_main_port_hides_it() {
    let mut settings = test_settings();
    settings.metrics_listen = Some("127.0.0.1:0".into());
    let app = spawn_app_with(settings).await;
    let port = app.metrics_port.expect("a metrics listener");
    assert_ne!(port, 0);
    let metrics = format!("http://127.0.0.1:{port}");
    let resp = app
        .client
        .get(format!("{metrics}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let samples = parse(&resp.text().await.unwrap());
    assert!(samples
        .iter()
        .any(|s| s.name == "moments_store_round_trips_total"));
    let elsewhere = app
        .client
        .get(format!("{metrics}/api/v1/me"))
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.status().as_u16(), 404);

    let admin = app.admin().await;
    assert_problem(
        &app.get("/metrics", Some(&admin.token)).await,
        404,
        "not_found",
    );
}
