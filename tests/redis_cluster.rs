//! The service on a real Redis Cluster survives losing a master: while the
//! cluster fails over it answers at worst 503 (never 500), it recovers by
//! itself, and every write it acknowledged, before, during or after, is
//! there afterwards. The killed node then comes back as a replica and the
//! service goes on. A read sent on a stale slot map (a slot moved since the
//! service last read the map) is answered right, and a fan-out takes one
//! script call per 500 followers per node.
//!
//! The test starts its own six `redis-server --cluster-enabled yes` nodes
//! (three masters with a replica each) on free loopback ports, so killing
//! one disturbs no other test. Needs `redis-server` and `redis-cli` on the
//! PATH and `MOMENTS_TEST_MONGODB_URI` (scripts/test.sh provides all three).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use moments::config::Settings;
use moments::startup::{Application, Stopper};

/// Generous bounds on recovery: the test fails if the service has not come
/// back by then, but never measures how fast it did.
const RECOVERY_DEADLINE: Duration = Duration::from_secs(60);

fn env(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is not set: run scripts/test.sh, which starts nx-27017"))
}

/// A port nobody listens on, and that this process has not handed out
/// before: a port freed here is free for anyone until its redis-server
/// binds it, and two clusters must never be given the same one.
fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut given = GIVEN.lock().unwrap();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// One cluster at a time: six nodes each on 2 cores is what the deadlines
/// here are measured against, and a failover needs its nodes to answer.
static ONE_CLUSTER_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Node {
    port: u16,
    bus_port: u16,
    dir: PathBuf,
    process: Option<Child>,
}

impl Node {
    fn start(&mut self) {
        let process = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--cluster-port", &self.bus_port.to_string()])
            .args(["--bind", "127.0.0.1", "--cluster-enabled", "yes"])
            .args(["--cluster-node-timeout", "2000"])
            .args(["--cluster-config-file", "nodes.conf"])
            .args(["--save", "", "--appendonly", "no", "--loglevel", "warning"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.dir.join("redis.log"))
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server on the PATH (scripts/test.sh installs it)");
        self.process = Some(process);
    }

    fn kill(&mut self) {
        if let Some(mut p) = self.process.take() {
            p.kill().unwrap();
            p.wait().unwrap();
        }
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

struct Cluster {
    nodes: Vec<Node>,
    root: PathBuf,
    /// Released after `drop` has stopped the nodes.
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

impl Cluster {
    async fn start() -> Self {
        let turn = ONE_CLUSTER_AT_A_TIME.lock().await;
        let mut suffix = [0u8; 6];
        getrandom::getrandom(&mut suffix).unwrap();
        let root = std::env::temp_dir().join(format!(
            "moments-cluster-{}",
            suffix
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        ));
        let mut nodes: Vec<Node> = (0..6)
            .map(|i| {
                let dir = root.join(format!("node{i}"));
                std::fs::create_dir_all(&dir).unwrap();
                Node {
                    port: free_port(),
                    bus_port: free_port(),
                    dir,
                    process: None,
                }
            })
            .collect();
        for n in &mut nodes {
            n.start();
        }
        for n in &nodes {
            wait_until("a node answers", || n.cli(&["ping"]).contains("PONG")).await;
        }
        let addrs: Vec<String> = nodes.iter().map(Node::addr).collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .unwrap();
        assert!(
            created.status.success(),
            "{}",
            String::from_utf8_lossy(&created.stdout)
        );
        let cluster = Self {
            nodes,
            root,
            _turn: turn,
        };
        cluster.wait_healthy().await;
        cluster
    }

    async fn wait_healthy(&self) {
        for n in self.nodes.iter().filter(|n| n.process.is_some()) {
            let start = Instant::now();
            while !n.cli(&["cluster", "info"]).contains("cluster_state:ok") {
                assert!(
                    start.elapsed() < RECOVERY_DEADLINE,
                    "the cluster is not ok on {}:\n{}",
                    n.addr(),
                    n.cli(&["cluster", "nodes"])
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            // A replica that never finished its first sync cannot take over.
            wait_until("every replica is in sync with its master", || {
                let info = n.cli(&["info", "replication"]);
                info.contains("role:master") || info.contains("master_link_status:up")
            })
            .await;
        }
    }

    fn seeds(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("redis://{}", n.addr()))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The node that is master of the slot of `key`, as a live node says.
    fn master_of(&self, key: &str) -> usize {
        let slot = redis::cluster_routing::get_slot(key.as_bytes());
        let map = self.slot_map();
        map.iter()
            .find(|(lo, hi, _)| (*lo..=*hi).contains(&slot))
            .map(|(_, _, node)| *node)
            .unwrap_or_else(|| panic!("no master serves slot {slot}: {map:?}"))
    }

    /// Each master's slot ranges, as (first, last, index into `nodes`).
    fn slot_map(&self) -> Vec<(u16, u16, usize)> {
        let asker = self.nodes.iter().find(|n| n.process.is_some()).unwrap();
        let mut map = Vec::new();
        for line in asker.cli(&["cluster", "nodes"]).lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 9 || !f[2].contains("master") || f[2].contains("fail") {
                continue;
            }
            let port: u16 = f[1].split(['@', ':']).nth(1).unwrap().parse().unwrap();
            let node = self.nodes.iter().position(|n| n.port == port).unwrap();
            for range in &f[8..] {
                let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                if let (Ok(lo), Ok(hi)) = (lo.parse(), hi.parse()) {
                    map.push((lo, hi, node));
                }
            }
        }
        map
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            n.kill();
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

async fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < RECOVERY_DEADLINE, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

struct App {
    base: String,
    http: reqwest::Client,
    stopper: Stopper,
    running: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl App {
    async fn start(db: &str, redis: String) -> Self {
        let settings = Settings {
            listen: "127.0.0.1:0".into(),
            mongodb_uri: Some(env("MOMENTS_TEST_MONGODB_URI")),
            mongodb_db: db.into(),
            redis_url: Some(redis),
            workers: Some(2),
            rate_limits: None,
            ..Settings::default()
        };
        moments::telemetry::init("error");
        let app = Application::build(settings).await.expect("build app");
        let base = format!("http://127.0.0.1:{}", app.port());
        let stopper = app.stopper();
        let running = tokio::spawn(app.run_until_stopped());
        Self {
            base,
            // Connections idle for less than the server's keep-alive (5 s)
            // only: this test idles for seconds while nodes come back, and
            // a pooled connection reused just as the server closes it fails
            // the request with IncompleteMessage, which is no answer of
            // the service's.
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .pool_idle_timeout(Duration::from_secs(2))
                .build()
                .unwrap(),
            stopper,
            running,
        }
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn user(&self, name: &str) -> (i64, String) {
        let password = format!("{name}-password-1");
        let body = json!({"username": name, "password": password});
        let (s, card) = self
            .call(Method::POST, "/api/v1/users", "", Some(body.clone()))
            .await;
        assert_eq!(s, 201, "{card}");
        let (s, session) = self
            .call(Method::POST, "/api/v1/sessions", "", Some(body))
            .await;
        assert_eq!(s, 201, "{session}");
        (
            card["uid"].as_i64().unwrap(),
            session["token"].as_str().unwrap().to_string(),
        )
    }
}

/// Every status the service may give a well-formed request while a master
/// is down: the answer, or "try again later".
fn acceptable(status: u16) -> bool {
    matches!(status, 200 | 201 | 503)
}

/// Every comment id on a post, walking its pages.
async fn all_comment_ids(app: &App, token: &str, post: i64) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut cursor = String::new();
    loop {
        let (s, page) = app
            .call(
                Method::GET,
                &format!("/api/v1/posts/{post}/comments?limit=50&cursor={cursor}"),
                token,
                None,
            )
            .await;
        assert_eq!(s, 200, "{page}");
        ids.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_i64().unwrap()),
        );
        match page["nextCursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => return ids,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_killed_mid_run_fails_over_and_loses_no_acknowledged_write() {
    let mut cluster = Cluster::start().await;
    let mut suffix = [0u8; 6];
    getrandom::getrandom(&mut suffix).unwrap();
    let db: String = std::iter::once("failover_".to_string())
        .chain(suffix.iter().map(|b| format!("{b:02x}")))
        .collect();
    let app = App::start(&db, cluster.seeds()).await;
    let (author_uid, author) = app.user("author").await;
    let (_, reader) = app.user("reader").await;
    let (s, v) = app
        .call(
            Method::PUT,
            &format!("/api/v1/users/{author_uid}/follow"),
            &reader,
            None,
        )
        .await;
    assert!(s < 300, "{s} {v}");
    let (s, post) = app
        .call(
            Method::POST,
            "/api/v1/posts",
            &author,
            Some(json!({"category": "TEXT", "content": "before the failover"})),
        )
        .await;
    assert_eq!(s, 201, "{post}");
    let post_id = post["id"].as_i64().unwrap();
    // Warm the live state: the post, its comments, the reader's timeline.
    let (s, _) = app.call(Method::GET, "/api/v1/feed", &reader, None).await;
    assert_eq!(s, 200);

    // The master of the post's keys is the one to go.
    let victim = cluster.master_of(&format!("{{p:{post_id}}}"));

    let mut acked_comments = Vec::new();
    let mut acked_posts = vec![post_id];
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    let mut round = 0;
    let mut killed_at = None;
    let mut recovered_writes = 0;
    while recovered_writes < 10 {
        round += 1;
        if round == 10 {
            cluster.nodes[victim].kill();
            killed_at = Some(Instant::now());
        }
        if let Some(at) = killed_at {
            assert!(
                at.elapsed() < RECOVERY_DEADLINE,
                "the service did not recover after the failover: {statuses:?}"
            );
        }
        let (s, c) = app
            .call(
                Method::POST,
                &format!("/api/v1/posts/{post_id}/comments"),
                &reader,
                Some(json!({"content": format!("comment {round}")})),
            )
            .await;
        *statuses.entry(s).or_default() += 1;
        let mut statuses_this_round = vec![s];
        assert!(acceptable(s), "comment {round}: {s} {c}");
        if s == 201 {
            acked_comments.push(c["id"].as_i64().unwrap());
        }
        let (s, p) = app
            .call(
                Method::POST,
                "/api/v1/posts",
                &author,
                Some(json!({"category": "TEXT", "content": format!("post {round}")})),
            )
            .await;
        *statuses.entry(s).or_default() += 1;
        statuses_this_round.push(s);
        assert!(acceptable(s), "post {round}: {s} {p}");
        if s == 201 {
            acked_posts.push(p["id"].as_i64().unwrap());
        }
        let (s, v) = app
            .call(
                Method::GET,
                &format!("/api/v1/posts/{post_id}"),
                &reader,
                None,
            )
            .await;
        *statuses.entry(s).or_default() += 1;
        assert!(acceptable(s), "read {round}: {s} {v}");
        // Rounds after the kill in which all three calls were answered.
        let answered = statuses_this_round.iter().all(|s| *s != 503) && s == 200;
        if killed_at.is_some() && answered {
            recovered_writes += 1;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cluster.wait_healthy().await;

    // Every acknowledged comment is on the post, counted and listed.
    wait_until_async(|| async {
        let (s, p) = app
            .call(
                Method::GET,
                &format!("/api/v1/posts/{post_id}"),
                &reader,
                None,
            )
            .await;
        s == 200 && p["commentCount"].as_u64() == Some(acked_comments.len() as u64)
    })
    .await;
    let mut listed = all_comment_ids(&app, &reader, post_id).await;
    listed.sort_unstable();
    let mut expected = acked_comments.clone();
    expected.sort_unstable();
    assert_eq!(listed, expected, "statuses seen: {statuses:?}");

    // Every acknowledged post reaches the reader's timeline (fan-outs a
    // failed push left behind are rebuilt from the documents).
    wait_until_async(|| async {
        let mut seen = Vec::new();
        let mut cursor = String::new();
        loop {
            let (s, page) = app
                .call(
                    Method::GET,
                    &format!("/api/v1/feed?limit=50&cursor={cursor}"),
                    &reader,
                    None,
                )
                .await;
            if s != 200 {
                return false;
            }
            seen.extend(
                page["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p["id"].as_i64().unwrap()),
            );
            match page["nextCursor"].as_str() {
                Some(c) => cursor = c.to_string(),
                None => break,
            }
        }
        acked_posts.iter().all(|p| seen.contains(p))
    })
    .await;

    // The killed node comes back, rejoins as a replica, and writes go on.
    cluster.nodes[victim].start();
    cluster.wait_healthy().await;
    wait_until("the old master rejoins as a replica", || {
        cluster.nodes[victim]
            .cli(&["role"])
            .lines()
            .next()
            .is_some_and(|l| l.contains("slave"))
    })
    .await;
    let (s, c) = app
        .call(
            Method::POST,
            &format!("/api/v1/posts/{post_id}/comments"),
            &reader,
            Some(json!({"content": "after the node came back"})),
        )
        .await;
    assert_eq!(s, 201, "{c}");
    let (s, p) = app
        .call(
            Method::GET,
            &format!("/api/v1/posts/{post_id}"),
            &reader,
            None,
        )
        .await;
    assert_eq!(s, 200);
    assert_eq!(p["commentCount"], acked_comments.len() as u64 + 1, "{p}");
    assert!(
        statuses.keys().all(|s| acceptable(*s)),
        "statuses seen: {statuses:?}"
    );

    eprintln!("statuses through the failover: {statuses:?}");
    app.stopper.stop();
    app.running.await.unwrap().unwrap();
}

async fn wait_until_async<F, Fut>(mut ok: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !ok().await {
        assert!(
            start.elapsed() < RECOVERY_DEADLINE,
            "timed out waiting for the live state to be rebuilt"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// EVAL calls each node has served, by its own INFO commandstats.
fn evals(node: &Node) -> u64 {
    node.cli(&["info", "commandstats"])
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_eval:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_takes_one_call_per_chunk_of_each_nodes_followers() {
    use moments::store::redis::RedisLive;
    use moments::store::{LiveFill, LiveRead, LiveStore, Owner, SetKey, SetRead};

    let cluster = Cluster::start().await;
    let prefix = format!("fan{}:", moments::ids::next_id());
    let live = RedisLive::connect(&cluster.seeds(), &prefix, 3600)
        .await
        .unwrap();
    // 2,600 built timelines, spread over every slot range, and 400 never
    // built (a push must not create those).
    let built: Vec<i64> = (1..=2600).collect();
    let absent: Vec<i64> = (5001..=5400).collect();
    for chunk in built.chunks(200) {
        let fill = LiveFill {
            sets: chunk
                .iter()
                .map(|u| (SetKey::Home(*u), Vec::new(), 0))
                .collect(),
            ..Default::default()
        };
        live.fill(&fill).await.unwrap();
    }
    let masters: Vec<&Node> = cluster
        .nodes
        .iter()
        .filter(|n| n.cli(&["role"]).starts_with("master"))
        .collect();
    assert_eq!(masters.len(), 3);
    let mut per_master = std::collections::HashMap::<usize, u64>::new();
    for uid in built.iter().chain(&absent) {
        let home = format!("{prefix}{{u:{uid}}}:home");
        *per_master.entry(cluster.master_of(&home)).or_default() += 1;
    }
    let expected_calls: u64 = per_master.values().map(|n| n.div_ceil(500)).sum();
    let before: u64 = masters.iter().map(|n| evals(n)).sum();

    let post = moments::ids::next_id();
    let followers: Vec<i64> = built.iter().chain(&absent).copied().collect();
    live.push_to_timelines(post, &followers, 800).await.unwrap();

    let after: u64 = masters.iter().map(|n| evals(n)).sum();
    assert_eq!(
        after - before,
        expected_calls,
        "one call per 500 followers per node ({per_master:?})"
    );
    // Every built timeline has the post; no absent one was made.
    let read = LiveRead {
        sets: followers
            .iter()
            .map(|u| SetRead {
                key: SetKey::Home(*u),
                top: 1,
                probe: Some(post),
                below: None,
            })
            .collect(),
        gens: vec![Owner::User(1)],
        ..Default::default()
    };
    let answer = live.read(&read).await.unwrap();
    for (uid, set) in followers.iter().zip(&answer.sets) {
        if *uid <= 2600 {
            let set = set
                .as_ref()
                .unwrap_or_else(|| panic!("timeline {uid} is gone"));
            assert_eq!(set.probe_score, Some(post), "timeline {uid} lacks the post");
        } else {
            assert!(set.is_none(), "timeline {uid} was created by a push");
        }
    }
}

/// Errors of `kind` (MOVED, ASK…) a node has answered, by its own INFO
/// errorstats.
fn errors_answered(node: &Node, kind: &str) -> u64 {
    let prefix = format!("errorstat_{kind}:count=");
    node.cli(&["info", "errorstats"])
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()).map(str::to_string))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Moves `slot` and its keys from master `from` to master `to`, as
/// `redis-cli --cluster reshard` does, telling every master.
fn move_slot(cluster: &Cluster, slot: u16, from: usize, to: usize) {
    let (a, b) = (&cluster.nodes[from], &cluster.nodes[to]);
    let id = |n: &Node| n.cli(&["cluster", "myid"]).trim().to_string();
    let (a_id, b_id) = (id(a), id(b));
    let slot = slot.to_string();
    assert!(b
        .cli(&["cluster", "setslot", &slot, "importing", &a_id])
        .contains("OK"));
    assert!(a
        .cli(&["cluster", "setslot", &slot, "migrating", &b_id])
        .contains("OK"));
    let keys: Vec<String> = a
        .cli(&["cluster", "getkeysinslot", &slot, "10000"])
        .lines()
        .map(str::to_string)
        .filter(|k| !k.is_empty())
        .collect();
    if !keys.is_empty() {
        let port = b.port.to_string();
        let mut args = vec!["migrate", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
        args.extend(keys.iter().map(String::as_str));
        assert!(a.cli(&args).contains("OK"), "MIGRATE of {keys:?}");
    }
    for n in cluster
        .nodes
        .iter()
        .filter(|n| n.cli(&["role"]).starts_with("master"))
    {
        assert!(n
            .cli(&["cluster", "setslot", &slot, "node", &b_id])
            .contains("OK"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_sent_per_node_on_a_stale_slot_map_is_answered_after_a_slot_moves() {
    // A page's read goes out as one pipeline per master, routed by the
    // service's own copy of the slot map. A slot moved since that copy was
    // read makes its old master answer MOVED for the slot's commands; the
    // node's part is then re-sent per slot, through the client's redirects.
    use moments::store::redis::RedisLive;
    use moments::store::{LiveFill, LiveRead, LiveStore, SetKey, SetRead};

    let cluster = Cluster::start().await;
    let prefix = format!("moved{}:", moments::ids::next_id());
    let live = RedisLive::connect(&cluster.seeds(), &prefix, 3600)
        .await
        .unwrap();
    let users: Vec<i64> = (1..=300).collect();
    let fill = LiveFill {
        sets: users
            .iter()
            .map(|u| (SetKey::Home(*u), vec![(1000 + u, 1000 + u)], 0))
            .collect(),
        ..Default::default()
    };
    live.fill(&fill).await.unwrap();
    let read = LiveRead {
        sets: users
            .iter()
            .map(|u| SetRead {
                key: SetKey::Home(*u),
                top: 1,
                probe: Some(1000 + u),
                below: None,
            })
            .collect(),
        ..Default::default()
    };
    let check = |answer: moments::store::LiveAnswer| {
        for (u, set) in users.iter().zip(&answer.sets) {
            let set = set
                .as_ref()
                .unwrap_or_else(|| panic!("timeline {u} read as absent"));
            assert_eq!(set.probe_score, Some(1000 + u), "timeline {u}");
        }
    };
    check(live.read(&read).await.unwrap());

    // The service rereads the map every second; a move made and read
    // between two of its readings is what this is about, so moves are made
    // until one was answered MOVED (each either way must read right).
    let mut moved_answers = 0;
    for attempt in 0..8_i64 {
        let key = format!("{prefix}{{u:{}}}:home", users[attempt as usize * 37]);
        let slot = redis::cluster_routing::get_slot(key.as_bytes());
        let from = cluster.master_of(&key);
        let to = cluster
            .slot_map()
            .iter()
            .map(|(_, _, n)| *n)
            .find(|n| *n != from)
            .unwrap();
        let before = errors_answered(&cluster.nodes[from], "MOVED");
        move_slot(&cluster, slot, from, to);
        check(live.read(&read).await.unwrap());
        moved_answers += errors_answered(&cluster.nodes[from], "MOVED") - before;
        if moved_answers > 0 {
            break;
        }
    }
    assert!(
        moved_answers > 0,
        "no read was ever sent on a stale map: the test proved nothing"
    );
    check(live.read(&read).await.unwrap());
}
