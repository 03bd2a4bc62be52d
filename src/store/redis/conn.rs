//! One Redis node or a Redis Cluster, behind one way of sending commands.
//!
//! The client is the `redis` crate's own, in both shapes: its
//! `ConnectionManager` for one node, and `cluster_async` for a cluster. The
//! cluster client follows MOVED and ASK, refreshes its slot map when the
//! topology changes, and reconnects to restarted and promoted nodes; `fred`
//! would do the same, but would mean a second client for the one-node case
//! or rewriting the adapter. What the cluster client does not do is send a
//! pipeline whose commands span slots: it refuses it with CROSSSLOT. So a
//! [`Batch`] records each command's slot and, on a cluster, goes out as one
//! pipeline per slot, all at once: one round trip of waiting whatever the
//! number of owners, and each pipeline redirected on its own, whole, if its
//! slot has moved (none of it ran on the wrong node, so a retry repeats
//! nothing).
//!
//! A read of a page touches some forty owners, so one pipeline per slot is
//! some forty pipelines. A batch whose commands are all harmless to send
//! twice ([`Batch::repeatable`]: reads, TTL refreshes, generation-guarded
//! fills) goes out instead as one pipeline per master, routed by the slot
//! map the service keeps; a node that answers with an error for any of it
//! (a slot moved, the node failed) gets its part re-sent per slot, through
//! the crate's redirects. Writes whose repetition would count twice stay
//! per slot.
//!
//! Replication in a cluster is asynchronous: a master killed right after
//! acknowledging a write may take it down with it, and its promoted replica
//! would then serve the state from before the write, stale until a TTL. So
//! a batch that carries the effects of acknowledged writes asks, per slot,
//! for `WAIT 1`: Redis answers once a replica has the writes (or after
//! [`WAIT_MS`]). A master known to have no replica is not asked, since it
//! would only wait out the timeout.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{get_slot, RoutingInfo, SingleNodeRoutingInfo};
use redis::{
    Cmd, ConnectionAddr, ConnectionInfo, ErrorKind, IntoConnectionInfo, RedisError, Value,
};

use crate::store::{StoreError, StoreResult};

/// Slots in a Redis Cluster.
const SLOTS: usize = 16384;

/// How long a write batch waits for a replica before going on without one
/// (a replica that slow is lagging anyway; the write is not failed).
const WAIT_MS: u64 = 50;

pub(crate) fn classify(e: RedisError) -> StoreError {
    let cluster_in_flux = matches!(
        e.kind(),
        ErrorKind::ClusterDown
            | ErrorKind::TryAgain
            | ErrorKind::MasterDown
            | ErrorKind::Moved
            | ErrorKind::Ask
            | ErrorKind::ClusterConnectionNotFound
            | ErrorKind::BusyLoadingError
            | ErrorKind::ReadOnly
    );
    if cluster_in_flux
        || e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
    {
        StoreError::Unavailable(e.into())
    } else {
        StoreError::Other(e.into())
    }
}

/// Whether `url` names a cluster: several comma-separated seed nodes.
pub fn is_cluster_url(url: &str) -> bool {
    url.contains(',')
}

/// Commands to send together, each with the slot of its key.
#[derive(Default)]
pub(super) struct Batch {
    entries: Vec<Entry>,
    replicated: bool,
    repeatable: bool,
}

struct Entry {
    /// Which of the command's arguments is the key that decides its slot.
    key_at: usize,
    cmd: Cmd,
    /// Whether the caller reads this command's reply.
    kept: bool,
}

impl Entry {
    /// The slot of the command's key, computed only on a cluster: on one
    /// node it cost 2% of a worker's CPU for nothing.
    fn slot(&self) -> u16 {
        let key = self.cmd.args_iter().nth(self.key_at).and_then(|a| match a {
            redis::Arg::Simple(bytes) => Some(bytes),
            redis::Arg::Cursor => None,
        });
        get_slot(key.unwrap_or_default())
    }
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// On a cluster, the batch returns once a replica of each master it
    /// wrote to has its writes (see the module's comment).
    pub fn replicated(mut self) -> Self {
        self.replicated = true;
        self
    }

    /// Every command in it may run twice without harm (see the module's
    /// comment), so on a cluster it may go out one pipeline per node.
    /// A rate-limit charge in such a batch counts twice when its node's
    /// part is re-sent (a slot moved, or the node answered after the
    /// client's 1 s timeout): only ever stricter, and only while the
    /// cluster is in trouble.
    pub fn repeatable(mut self) -> Self {
        self.repeatable = true;
        self
    }

    /// A command on `key`, its first argument.
    pub fn cmd(&mut self, name: &str, key: &str) -> &mut Cmd {
        let mut cmd = redis::cmd(name);
        cmd.arg(key);
        self.push(1, cmd)
    }

    /// EVAL of `script` over `keys` (all of one slot: the first decides).
    pub fn eval(&mut self, script: &str, keys: &[&str]) -> &mut Cmd {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(script).arg(keys.len()).arg(keys);
        self.push(3, cmd)
    }

    fn push(&mut self, key_at: usize, cmd: Cmd) -> &mut Cmd {
        let at = self.entries.len();
        self.entries.push(Entry {
            key_at,
            cmd,
            kept: true,
        });
        &mut self.entries[at].cmd
    }

    /// The last command's reply is not returned.
    pub fn ignore(&mut self) {
        if let Some(e) = self.entries.last_mut() {
            e.kept = false;
        }
    }
}

/// The masters of a cluster and which of them serves each slot.
pub(super) struct Shape {
    masters: Vec<(String, u16)>,
    /// Per master, whether CLUSTER SLOTS listed a replica for it.
    replicated: Vec<bool>,
    /// Every node listed, masters and replicas: where to ask next time.
    nodes: Vec<(String, u16)>,
    /// Index into `masters` per slot; `u16::MAX` where no master is known.
    owner: Vec<u16>,
}

impl Shape {
    fn same_routing(&self, other: &Shape) -> bool {
        self.masters == other.masters && self.owner == other.owner
    }
}

/// How often each cluster connection reads the slot map. The `redis`
/// crate's cluster client rereads it only when a node answers MOVED, and a
/// killed master answers nothing: without this it would go on sending that
/// master's slots to the dead address after its replica took over
/// (measured here: every request then waited out its retries, about 15 s,
/// for as long as the process ran). When the map differs from the one the
/// client was built with, the client is rebuilt from the new map's nodes.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// A cluster's client, the slot map it was built on, and how to reach its
/// nodes.
pub(super) struct Cluster {
    conn: std::sync::RwLock<ClusterConnection>,
    shape: std::sync::RwLock<Arc<Shape>>,
    /// The seeds' credentials and database: every node is reached with
    /// them, at the address the slot map gives.
    template: ConnectionInfo,
    seeds: Vec<(String, u16)>,
    /// One reading of the map at a time.
    refreshing: tokio::sync::Mutex<()>,
    /// A reread asked for by a failed node pipeline is on its way: the
    /// next failures do not ask again (a dead master fails every request).
    reread_asked: std::sync::atomic::AtomicBool,
}

#[derive(Clone)]
pub(super) enum Conn {
    Node(Arc<NodeConns>),
    Cluster(Arc<Cluster>),
}

/// One Redis node's connections: one per thread that runs a runtime of its
/// own (each actix worker does), made there on first use, and the one made
/// at connect time for every other caller. A connection's driver task runs
/// on the runtime that made it: shared by the workers, it ran on the main
/// thread, and every command cost two cross-thread wake-ups (the worker's
/// to the main thread and back) on top of the round trip. (Measured: the
/// mix's throughput did not move, Redis's own CPU bounds it; BENCHMARKS.md.)
pub(super) struct NodeConns {
    client: redis::Client,
    config: redis::aio::ConnectionManagerConfig,
    shared: ConnectionManager,
    /// When making a thread's connection last failed (ms since the epoch):
    /// for a second after, threads use the shared one instead of each
    /// waiting out a connect timeout per command while Redis is away.
    failed_at: std::sync::atomic::AtomicI64,
}

thread_local! {
    /// This thread's connections, by the `NodeConns` they belong to (a
    /// process may hold several: tests, tools).
    static THREAD_CONNS: std::cell::RefCell<Vec<(std::sync::Weak<NodeConns>, ConnectionManager)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl NodeConns {
    /// `me`'s connection among a thread's.
    fn mine(
        conns: &[(std::sync::Weak<NodeConns>, ConnectionManager)],
        me: &Arc<Self>,
    ) -> Option<ConnectionManager> {
        conns
            .iter()
            .find(|(owner, _)| std::ptr::eq(owner.as_ptr(), Arc::as_ptr(me)))
            .map(|(_, c)| c.clone())
    }

    /// The connection for a command sent from here: this thread's when it
    /// runs a single-threaded runtime (its tasks never leave it), made if
    /// need be; else the shared one (a multi-threaded runtime's tasks move
    /// between its threads, and its driver with them).
    async fn conn(me: &Arc<Self>) -> ConnectionManager {
        use tokio::runtime::{Handle, RuntimeFlavor};
        let own_thread =
            Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::CurrentThread);
        if !own_thread {
            return me.shared.clone();
        }
        if let Some(c) = THREAD_CONNS.with_borrow(|conns| Self::mine(conns, me)) {
            return c;
        }
        let now = crate::ids::now_ms();
        if now - me.failed_at.load(std::sync::atomic::Ordering::Relaxed) < 1000 {
            return me.shared.clone();
        }
        match ConnectionManager::new_with_config(me.client.clone(), me.config.clone()).await {
            Ok(made) => THREAD_CONNS.with_borrow_mut(|conns| {
                conns.retain(|(owner, _)| owner.strong_count() > 0);
                // Another request on this thread may have made one meanwhile.
                if let Some(c) = Self::mine(conns, me) {
                    return c;
                }
                conns.push((Arc::downgrade(me), made.clone()));
                made
            }),
            // Redis unreachable now: the shared connection fails (or
            // reconnects) as it did before, and the next command tries
            // again to make this thread's.
            Err(e) => {
                tracing::debug!(error = %e, "no connection of this thread's to Redis yet");
                me.failed_at
                    .store(crate::ids::now_ms(), std::sync::atomic::Ordering::Relaxed);
                me.shared.clone()
            }
        }
    }
}

fn other(e: impl Into<anyhow::Error>) -> StoreError {
    StoreError::Other(e.into())
}

/// `template` with `host:port` for its address.
fn at(template: &ConnectionInfo, host: &str, port: u16) -> ConnectionInfo {
    let mut info = template.clone();
    info.addr = match &template.addr {
        ConnectionAddr::TcpTls {
            insecure,
            tls_params,
            ..
        } => ConnectionAddr::TcpTls {
            host: host.to_string(),
            port,
            insecure: *insecure,
            tls_params: tls_params.clone(),
        },
        _ => ConnectionAddr::Tcp(host.to_string(), port),
    };
    info
}

/// A cluster client that starts from `nodes`.
async fn cluster_client(
    template: &ConnectionInfo,
    nodes: &[(String, u16)],
) -> StoreResult<ClusterConnection> {
    let infos: Vec<ConnectionInfo> = nodes.iter().map(|(h, p)| at(template, h, *p)).collect();
    // Short timeouts and few, quick retries: while a master is down its
    // slots fail fast (503) instead of holding requests for seconds.
    let timeout = Duration::from_secs(1);
    redis::cluster::ClusterClient::builder(infos)
        .connection_timeout(timeout)
        .response_timeout(timeout)
        .retries(2)
        .min_retry_wait(50)
        .max_retry_wait(500)
        .build()
        .map_err(other)?
        .get_async_connection()
        .await
        .map_err(classify)
}

impl Cluster {
    fn conn(&self) -> ClusterConnection {
        match self.conn.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn shape(&self) -> Arc<Shape> {
        match self.shape.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Reads the slot map from the first node that answers (the last map's
    /// nodes, then the seeds) and, if the routing changed, rebuilds the
    /// client on it.
    async fn refresh(&self) -> StoreResult<()> {
        let _one = self.refreshing.lock().await;
        let old = self.shape();
        let mut candidates = old.nodes.clone();
        candidates.extend(self.seeds.iter().cloned());
        let new = read_shape(&self.template, &candidates).await?;
        if !new.same_routing(&old) {
            tracing::warn!(
                masters = ?new.masters,
                "the Redis Cluster's slot map changed; reconnecting"
            );
            let conn = cluster_client(&self.template, &new.nodes).await?;
            if let Ok(mut c) = self.conn.write() {
                *c = conn;
            }
        }
        if let Ok(mut s) = self.shape.write() {
            *s = Arc::new(new);
        }
        Ok(())
    }

    /// Each entry's reply, by its index: one pipeline per slot, all at once,
    /// each redirected whole by the crate if its slot moved.
    async fn send_per_slot(
        &self,
        entries: Vec<(usize, Entry)>,
        replicated: bool,
    ) -> StoreResult<Vec<(usize, Value)>> {
        let conn = self.conn();
        let mut by_slot: BTreeMap<u16, (redis::Pipeline, Vec<usize>)> = BTreeMap::new();
        for (i, e) in entries {
            let (pipe, at) = by_slot
                .entry(e.slot())
                .or_insert_with(|| (redis::pipe(), Vec::new()));
            pipe.add_command(e.cmd);
            at.push(i);
        }
        if replicated {
            let shape = self.shape();
            for (slot, (pipe, _)) in by_slot.iter_mut() {
                if shape.has_replica(*slot) {
                    // Keyless: it goes with the pipeline to the slot's node.
                    pipe.cmd("WAIT").arg(1).arg(WAIT_MS).ignore();
                }
            }
        }
        let groups = by_slot.into_values().map(|(pipe, at)| {
            let mut conn = conn.clone();
            async move {
                let values: Vec<Value> = pipe.query_async(&mut conn).await.map_err(classify)?;
                Ok::<_, StoreError>(at.into_iter().zip(values).collect::<Vec<_>>())
            }
        });
        Ok(futures_util::future::try_join_all(groups)
            .await?
            .into_iter()
            .flatten()
            .collect())
    }

    /// Each entry's reply, by its index: one pipeline per master the slot
    /// map names, all at once. A node's part that fails (any error reply:
    /// a slot moved, the node is down) is re-sent per slot, and the map
    /// reread in the background.
    async fn send_per_node(
        self: &Arc<Self>,
        entries: Vec<(usize, Entry)>,
    ) -> StoreResult<Vec<(usize, Value)>> {
        let shape = self.shape();
        let mut by_node: BTreeMap<u16, Vec<(usize, Entry)>> = BTreeMap::new();
        for (i, e) in entries {
            let owner = shape.owner[usize::from(e.slot())];
            by_node.entry(owner).or_default().push((i, e));
        }
        let conn = self.conn();
        let groups = by_node.into_iter().map(|(owner, part)| {
            let mut conn = conn.clone();
            let address = shape.masters.get(usize::from(owner)).cloned();
            async move {
                if let Some((host, port)) = address {
                    let mut pipe = redis::pipe();
                    for (_, e) in &part {
                        pipe.add_command(e.cmd.clone());
                    }
                    let route = SingleNodeRoutingInfo::ByAddress { host, port };
                    if let Ok(values) = conn.route_pipeline(&pipe, 0, part.len(), route).await {
                        // Error replies come back as values here: one of
                        // them (MOVED, most likely) fails the whole part.
                        let whole = values.len() == part.len()
                            && !values.iter().any(|v| matches!(v, Value::ServerError(_)));
                        if whole {
                            let at = part.into_iter().map(|(i, _)| i);
                            return Ok(at.zip(values).collect());
                        }
                    }
                    use std::sync::atomic::Ordering;
                    if !self.reread_asked.swap(true, Ordering::AcqRel) {
                        let me = self.clone();
                        tokio::spawn(async move {
                            if let Err(e) = me.refresh().await {
                                tracing::debug!(error = %e, "rereading the slot map after a failed node pipeline failed");
                            }
                            me.reread_asked.store(false, Ordering::Release);
                        });
                    }
                }
                self.send_per_slot(part, false).await
            }
        });
        Ok(futures_util::future::try_join_all(groups)
            .await?
            .into_iter()
            .flatten()
            .collect())
    }

    /// Rereads the map every [`WATCH_EVERY`] for as long as the cluster
    /// connection is in use.
    fn watch(me: &Arc<Self>) {
        let weak = Arc::downgrade(me);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                let Some(cluster) = weak.upgrade() else {
                    return;
                };
                if let Err(e) = cluster.refresh().await {
                    tracing::warn!(error = %e, "reading the Redis Cluster's slot map failed");
                }
            }
        });
    }
}

impl Conn {
    pub async fn connect(url: &str) -> StoreResult<Self> {
        if is_cluster_url(url) {
            let infos: Vec<ConnectionInfo> = url
                .split(',')
                .map(|seed| seed.trim().into_connection_info())
                .collect::<Result<_, _>>()
                .map_err(other)?;
            let seeds: Vec<(String, u16)> = infos
                .iter()
                .filter_map(|i| match &i.addr {
                    ConnectionAddr::Tcp(h, p)
                    | ConnectionAddr::TcpTls {
                        host: h, port: p, ..
                    } => Some((h.clone(), *p)),
                    _ => None,
                })
                .collect();
            let template = infos
                .first()
                .cloned()
                .ok_or_else(|| other(anyhow::anyhow!("no seed nodes")))?;
            let shape = read_shape(&template, &seeds).await?;
            let conn = cluster_client(&template, &shape.nodes).await?;
            let cluster = Arc::new(Cluster {
                conn: std::sync::RwLock::new(conn),
                shape: std::sync::RwLock::new(Arc::new(shape)),
                template,
                seeds,
                refreshing: tokio::sync::Mutex::new(()),
                reread_asked: std::sync::atomic::AtomicBool::new(false),
            });
            Cluster::watch(&cluster);
            return Ok(Conn::Cluster(cluster));
        }
        let timeout = Duration::from_secs(2);
        let client = redis::Client::open(url).map_err(other)?;
        // The crate hands `factor` to its backoff as the growth per retry
        // (over a one-second first delay, capped at a minute), not as the
        // millisecond unit its docs describe: with the defaults, a Redis
        // that refuses connections held every request about two minutes
        // (measured here, tests/two_instances.rs). With one capped retry a
        // request waits about a second (the backoff's first delay) before
        // its fallback.
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(timeout)
            .set_response_timeout(timeout)
            .set_number_of_retries(1)
            .set_factor(2)
            .set_max_delay(200);
        let shared = ConnectionManager::new_with_config(client.clone(), config.clone())
            .await
            .map_err(classify)?;
        Ok(Conn::Node(Arc::new(NodeConns {
            client,
            config,
            shared,
            failed_at: std::sync::atomic::AtomicI64::new(0),
        })))
    }

    /// One command, sent to its key's node.
    pub async fn query<T: redis::FromRedisValue>(&self, cmd: &Cmd) -> StoreResult<T> {
        match self {
            Conn::Node(c) => cmd
                .query_async(&mut NodeConns::conn(c).await)
                .await
                .map_err(classify),
            Conn::Cluster(c) => cmd.query_async(&mut c.conn()).await.map_err(classify),
        }
    }

    /// Sends the batch and returns the replies of its kept commands, in
    /// order.
    pub async fn run(&self, batch: Batch) -> StoreResult<Vec<Value>> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let cluster = match self {
            Conn::Node(c) => {
                let mut pipe = redis::pipe();
                for e in batch.entries {
                    pipe.add_command(e.cmd);
                    if !e.kept {
                        pipe.ignore();
                    }
                }
                return pipe
                    .query_async(&mut NodeConns::conn(c).await)
                    .await
                    .map_err(classify);
            }
            Conn::Cluster(c) => c,
        };
        let kept: Vec<bool> = batch.entries.iter().map(|e| e.kept).collect();
        let indexed: Vec<(usize, Entry)> = batch.entries.into_iter().enumerate().collect();
        let answered = if batch.repeatable && !batch.replicated {
            cluster.send_per_node(indexed).await?
        } else {
            cluster.send_per_slot(indexed, batch.replicated).await?
        };
        let mut replies: Vec<Option<Value>> = vec![None; kept.len()];
        for (i, v) in answered {
            replies[i] = Some(v);
        }
        replies
            .into_iter()
            .zip(kept)
            .filter(|(_, kept)| *kept)
            .map(|(v, _)| {
                v.ok_or_else(|| StoreError::Other(anyhow::anyhow!("short pipeline reply")))
            })
            .collect()
    }

    /// Groups keys by the node that serves them (one group on a single
    /// node), so a script may touch all of one group's keys at once.
    /// `forget` first rereads the slot map, after a script found a key not
    /// local to its node.
    pub async fn group_by_node(
        &self,
        keys: Vec<String>,
        forget: bool,
    ) -> StoreResult<Vec<Vec<String>>> {
        let Conn::Cluster(cluster) = self else {
            return Ok(vec![keys]);
        };
        if forget {
            cluster.refresh().await?;
        }
        let shape = cluster.shape();
        let mut groups: BTreeMap<u16, Vec<String>> = BTreeMap::new();
        for key in keys {
            let owner = shape.owner[usize::from(get_slot(key.as_bytes()))];
            groups.entry(owner).or_default().push(key);
        }
        Ok(groups.into_values().collect())
    }

    /// The nodes that hold keys: the one node, or every master.
    /// Whether this is a cluster (whose commands must each stay within
    /// one slot) rather than one node.
    pub fn is_cluster(&self) -> bool {
        matches!(self, Conn::Cluster(_))
    }

    pub fn nodes(&self) -> Vec<Node> {
        match self {
            Conn::Node(_) => vec![Node::Only],
            Conn::Cluster(c) => c
                .shape()
                .masters
                .iter()
                .map(|(host, port)| Node::Master(host.clone(), *port))
                .collect(),
        }
    }

    /// `cmd` on one node, for commands like SCAN that see one node's keys.
    pub async fn query_on<T: redis::FromRedisValue>(
        &self,
        node: &Node,
        cmd: &Cmd,
    ) -> StoreResult<T> {
        match (self, node) {
            (Conn::Cluster(c), Node::Master(host, port)) => {
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                    host: host.clone(),
                    port: *port,
                });
                let value = c
                    .conn()
                    .route_command(cmd, routing)
                    .await
                    .map_err(classify)?;
                redis::from_redis_value(&value).map_err(other)
            }
            _ => self.query(cmd).await,
        }
    }
}

/// A node that holds keys, from [`Conn::nodes`].
pub(super) enum Node {
    Only,
    Master(String, u16),
}

impl Shape {
    fn has_replica(&self, slot: u16) -> bool {
        let owner = usize::from(self.owner[usize::from(slot)]);
        self.replicated.get(owner).copied().unwrap_or(false)
    }
}

/// The slot map, from CLUSTER SLOTS on the first of `nodes` that answers,
/// over a connection of its own (the cluster client may be the thing that
/// is stuck).
async fn read_shape(template: &ConnectionInfo, nodes: &[(String, u16)]) -> StoreResult<Shape> {
    let timeout = Duration::from_millis(500);
    let mut last = StoreError::Unavailable(anyhow::anyhow!("no Redis Cluster node to ask"));
    for (host, port) in nodes {
        let asked = async {
            let client = redis::Client::open(at(template, host, *port)).map_err(other)?;
            let mut conn = client
                .get_multiplexed_async_connection_with_config(
                    &redis::AsyncConnectionConfig::new()
                        .set_connection_timeout(timeout)
                        .set_response_timeout(timeout),
                )
                .await
                .map_err(classify)?;
            let value: Value = redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query_async(&mut conn)
                .await
                .map_err(classify)?;
            parse_shape(value)
        };
        match asked.await {
            Ok(shape) if !shape.masters.is_empty() => return Ok(shape),
            Ok(_) => {}
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Each entry of a CLUSTER SLOTS reply is a range's first and last slot,
/// then its master's host and port, then its replicas'.
fn parse_shape(value: Value) -> StoreResult<Shape> {
    fn node(v: &Value) -> redis::RedisResult<(String, u16)> {
        let parts: Vec<Value> = redis::from_redis_value(v)?;
        let host: String = redis::from_redis_value(parts.first().unwrap_or(&Value::Nil))?;
        let port: u16 = redis::from_redis_value(parts.get(1).unwrap_or(&Value::Nil))?;
        Ok((host, port))
    }
    let unexpected = || other(anyhow::anyhow!("unexpected CLUSTER SLOTS reply"));
    let Value::Array(items) = value else {
        return Err(unexpected());
    };
    let mut masters: Vec<(String, u16)> = Vec::new();
    let mut replicated = Vec::new();
    let mut nodes: Vec<(String, u16)> = Vec::new();
    let mut owner = vec![u16::MAX; SLOTS];
    for item in &items {
        let Value::Array(parts) = item else {
            return Err(unexpected());
        };
        if parts.len() < 3 {
            return Err(unexpected());
        }
        let start: u16 = redis::from_redis_value(&parts[0]).map_err(other)?;
        let end: u16 = redis::from_redis_value(&parts[1]).map_err(other)?;
        let master = node(&parts[2]).map_err(other)?;
        for n in &parts[2..] {
            let n = node(n).map_err(other)?;
            if !nodes.contains(&n) {
                nodes.push(n);
            }
        }
        let index = match masters.iter().position(|m| *m == master) {
            Some(i) => i,
            None => {
                masters.push(master);
                replicated.push(parts.len() > 3);
                masters.len() - 1
            }
        };
        for slot in start..=end.min(SLOTS as u16 - 1) {
            owner[usize::from(slot)] = index as u16;
        }
    }
    Ok(Shape {
        masters,
        replicated,
        nodes,
        owner,
    })
}
