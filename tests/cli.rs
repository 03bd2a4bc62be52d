//! The binary as an operator meets it: `--help`, a refused setting, a
//! warning about an unknown one, and JSON logs. Each test runs the real
//! `moments` with an environment of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use moments::config::variables;
use serde_json::Value;

/// How long start-up, or exiting, may take: a debug build on a busy
/// machine is slow, but a hang must still end the test.
const WAIT: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stream {
    Stdout,
    Stderr,
}

/// A running `moments`, killed (and its data directory removed) however
/// the test ends, so a failed assertion leaves no server behind.
struct Running {
    child: Child,
    lines: Receiver<(Stream, String)>,
    /// Every line read so far, for failure messages.
    seen: Vec<(Stream, String)>,
    dir: PathBuf,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A directory path of this test's own, not yet created.
fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("moments-cli-{}-{tag}-{n}", std::process::id()))
}

/// `moments ARGS` with nothing of this process's environment (a developer's
/// `MOMENTS_*` or the harness's), its documents under `dir`, on a free port.
fn moments(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Running {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_moments"));
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("MOMENTS_DATA_DIR", dir)
        .env("MOMENTS_LISTEN", "127.0.0.1:0")
        .env("RUST_LOG", "info")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start moments");
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().expect("stdout");
    let err = child.stderr.take().expect("stderr");
    for (stream, pipe) in [
        (Stream::Stdout, Box::new(out) as Box<dyn Read + Send>),
        (Stream::Stderr, Box::new(err)),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if tx.send((stream, line)).is_err() {
                    break;
                }
            }
        });
    }
    Running {
        child,
        lines: rx,
        seen: Vec::new(),
        dir: dir.to_path_buf(),
    }
}

impl Running {
    fn transcript(&self) -> String {
        self.seen
            .iter()
            .map(|(s, l)| format!("{s:?}: {l}\n"))
            .collect()
    }

    fn lines_of(&self, stream: Stream) -> Vec<&str> {
        self.seen
            .iter()
            .filter(|(s, _)| *s == stream)
            .map(|(_, l)| l.as_str())
            .collect()
    }

    /// Reads until a line of `stream` satisfies `stop`, and returns it;
    /// fails if the process closes its output first or `WAIT` passes.
    fn read_until(&mut self, stream: Stream, stop: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((s, line)) => {
                    self.seen.push((s, line.clone()));
                    if s == stream && stop(&line) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no such line within {WAIT:?}; so far:\n{}",
                        self.transcript()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "moments closed its output first; it wrote:\n{}",
                        self.transcript()
                    )
                }
            }
        }
    }

    /// Reads everything until the process exits; fails if it is still
    /// running after `WAIT`.
    fn exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "still running after {WAIT:?}; it wrote:\n{}",
                        self.transcript()
                    )
                }
            }
        }
        // Both pipes closed: the process is exiting, if not gone already.
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "closed its output but did not exit"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// `text` with every run of whitespace one space: help wraps its lines.
fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn help_lists_every_setting_with_its_default() {
    let mut outputs = Vec::new();
    for arg in ["--help", "-h", "help"] {
        let dir = temp_dir("help");
        let mut run = moments(&dir, &[arg], &[]);
        let status = run.exit();
        assert!(status.success(), "{arg}: {status}\n{}", run.transcript());
        let stdout = run.lines_of(Stream::Stdout).join("\n");
        assert!(stdout.starts_with("usage: moments"), "{arg}:\n{stdout}");
        for v in variables() {
            let line = stdout
                .lines()
                .find(|l| {
                    l.trim_start().starts_with(&format!("{} ", v.name)) && l.contains("default")
                })
                .unwrap_or_else(|| panic!("{arg}: {} is not listed:\n{stdout}", v.name));
            assert!(
                line.contains(v.default.text()),
                "{arg}: {line:?} does not show the default {:?}",
                v.default.text()
            );
            assert!(
                words(&stdout).contains(&words(v.allowed)),
                "{arg}: what {} allows is missing",
                v.name
            );
        }
        assert!(!dir.exists(), "{arg}: help opened the data directory");
        outputs.push(stdout);
    }
    assert!(
        outputs.windows(2).all(|w| w[0] == w[1]),
        "--help, -h and help differ"
    );
}

#[test]
fn an_invalid_value_stops_start_up_naming_the_variable() {
    let dir = temp_dir("invalid");
    let mut run = moments(&dir, &[], &[("MOMENTS_BODY_LIMIT", "lots")]);
    let status = run.exit();
    assert!(!status.success(), "exited {status}\n{}", run.transcript());
    let stderr = run.lines_of(Stream::Stderr);
    assert_eq!(
        stderr,
        ["moments: MOMENTS_BODY_LIMIT must be a whole number of bytes, at least 1; got \"lots\""],
        "{}",
        run.transcript()
    );
    // Refused before the stores are opened, so before anything is bound.
    assert!(!dir.exists(), "the data directory was created");
}

#[test]
fn an_unknown_variable_is_warned_about_with_the_closest_setting() {
    let dir = temp_dir("unknown");
    let mut run = moments(
        &dir,
        &[],
        &[("MOMENTS_BODY_LIMTI", "1"), ("MOMENTS_TEST_SOMETHING", "1")],
    );
    let line = run.read_until(Stream::Stderr, |l| {
        l.contains("MOMENTS_BODY_LIMTI") || l.contains("serving")
    });
    assert!(
        line.contains("WARN")
            && line.contains("MOMENTS_BODY_LIMTI is not a moments setting")
            && line.contains("did you mean MOMENTS_BODY_LIMIT?"),
        "{line}"
    );
    run.read_until(Stream::Stderr, |l| l.contains("serving"));
    assert!(
        !run.transcript().contains("MOMENTS_TEST_SOMETHING"),
        "the harness's own variable was warned about:\n{}",
        run.transcript()
    );
}

#[test]
fn json_logs_are_one_object_per_line_with_the_request_id() {
    let dir = temp_dir("json");
    let mut run = moments(
        &dir,
        &[],
        &[
            ("MOMENTS_LOG_FORMAT", "json"),
            ("MOMENTS_BODY_LIMTI", "1"),
            ("RUST_LOG", "info,moments=debug"),
        ],
    );
    let message = |line: &str| -> Option<String> {
        let v: Value = serde_json::from_str(line).ok()?;
        v["fields"]["message"].as_str().map(str::to_string)
    };
    let serving = run.read_until(Stream::Stderr, |l| message(l).as_deref() == Some("serving"));
    let port = serde_json::from_str::<Value>(&serving).unwrap()["fields"]["port"]
        .as_u64()
        .expect("the serving line names its port");

    let request_id = "cli-json-7";
    let mut conn = TcpStream::connect(("127.0.0.1", port as u16)).unwrap();
    conn.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        conn,
        "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: {request_id}\r\n\
         Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // The request's own line (debug), logged inside the request span.
    let line = run.read_until(Stream::Stderr, |l| message(l).as_deref() == Some("done"));
    let event: Value = serde_json::from_str(&line).unwrap();
    let spans = event["spans"].as_array().expect("the line lists its spans");
    assert!(
        spans
            .iter()
            .any(|s| s["name"] == "request" && s["request_id"] == request_id),
        "{line}"
    );

    let stderr = run.lines_of(Stream::Stderr);
    assert!(stderr.len() >= 3, "{}", run.transcript());
    for line in &stderr {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(v.is_object(), "not an object: {line}");
    }
    assert!(
        stderr
            .iter()
            .any(|l| l.contains("\"WARN\"") && l.contains("MOMENTS_BODY_LIMTI")),
        "the unknown-variable warning is missing:\n{}",
        run.transcript()
    );
}

/// `moments rebuild-search` empties the index and fills it again from the
/// documents; with the index held by a running instance it says to stop
/// that first, and changes nothing.
#[test]
fn rebuild_search_indexes_every_post_again_or_says_what_holds_the_index() {
    use moments::store::embedded::search::EmbeddedSearch;
    use moments::store::search::{PostSearch, SearchIndex};
    use moments::store::{AccountDocs, DocStore, PostDoc, PostDocs, UserDoc};

    let dir = temp_dir("rebuild-search");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Made a day ago: long settled, so the mark goes through them.
    let day_ago = moments::ids::first_id_at(moments::ids::now_ms() - 86_400_000);
    let (uid, post) = (day_ago + 1, day_ago + 2);
    runtime.block_on(async {
        let db = moments::store::embedded::open(&dir, 1 << 20).unwrap();
        let docs = moments::store::embedded::documents::EmbeddedDocs::new(db, 100);
        docs.apply_schemas().await.unwrap();
        docs.insert_user(&UserDoc::new(uid, "rebuilder", String::new(), 1))
            .await
            .unwrap();
        docs.insert_post(&PostDoc::text(post, uid, "西湖的晚霞 lanterns", 2))
            .await
            .unwrap();
        docs.close().await.unwrap();
    });
    let search_dir = dir.join("search");
    let lanterns = PostSearch {
        terms: vec!["lantern".into()],
        circle: vec![uid],
        limit: 10,
        ..Default::default()
    };

    // Held open (as a serving instance holds it): refused, nothing done.
    let held = EmbeddedSearch::open(&search_dir).unwrap();
    let mut busy = moments(&dir, &["rebuild-search"], &[]);
    assert!(!busy.exit().success(), "{}", busy.transcript());
    assert!(
        busy.lines_of(Stream::Stderr)
            .iter()
            .any(|l| l.contains("is in use; stop the instance that uses it first")),
        "{}",
        busy.transcript()
    );
    // Its end is not the end of the data directory, which goes on below.
    busy.dir = temp_dir("unused");
    drop(busy);
    drop(held);

    let mut run = moments(&dir, &["rebuild-search"], &[]);
    assert!(run.exit().success(), "{}", run.transcript());
    assert!(
        run.lines_of(Stream::Stdout)
            .iter()
            .any(|l| l.contains("read 1")),
        "{}",
        run.transcript()
    );
    let index = EmbeddedSearch::open(&search_dir).unwrap();
    let found = runtime.block_on(index.search_posts(&lanterns)).unwrap();
    assert_eq!(found.iter().map(|h| h.id).collect::<Vec<_>>(), [post]);
    assert_eq!(
        runtime.block_on(index.indexed_through()).unwrap(),
        Some(post),
        "the mark is where the rebuild got to"
    );
}
