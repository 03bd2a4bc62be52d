//! The four stores behind the `Store` / `Session` traits. Each `put` is one
//! atomic transaction (document + index entry) that is durable on return.

use std::path::Path;

use crate::{Item, Session, Store};

fn be(x: u64) -> [u8; 8] {
    x.to_be_bytes()
}

fn idx_key(author: u64, id: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&be(author));
    k[8..].copy_from_slice(&be(id));
    k
}

fn post_of(idx_key: &[u8]) -> u64 {
    u64::from_be_bytes(idx_key[8..16].try_into().expect("16-byte key"))
}

// ---------------------------------------------------------------- redb ----

/// Same table shapes as src/store/embedded/docs.rs: u64 → bytes, (u64, u64) → ().
const POSTS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("posts");
const POSTS_BY_AUTHOR: redb::TableDefinition<(u64, u64), ()> =
    redb::TableDefinition::new("posts_by_author");

pub struct Redb(redb::Database);

impl Store for Redb {
    const NAME: &'static str = "redb";
    fn open(dir: &Path) -> Self {
        let db = redb::Database::create(dir.join("bench.redb")).expect("redb open");
        let tx = db.begin_write().expect("begin_write");
        tx.open_table(POSTS).expect("table");
        tx.open_table(POSTS_BY_AUTHOR).expect("table");
        tx.commit().expect("commit");
        Redb(db)
    }
    fn session(&self) -> Box<dyn Session + '_> {
        Box::new(RedbS(&self.0))
    }
}

struct RedbS<'a>(&'a redb::Database);

impl Session for RedbS<'_> {
    fn put(&mut self, items: &[Item]) {
        // Default durability is Immediate: fsync before commit returns.
        let tx = self.0.begin_write().expect("begin_write");
        {
            let mut posts = tx.open_table(POSTS).expect("table");
            let mut idx = tx.open_table(POSTS_BY_AUTHOR).expect("table");
            for it in items {
                posts.insert(it.id, it.doc.as_slice()).expect("insert");
                idx.insert((it.author, it.id), ()).expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    fn get(&mut self, id: u64) -> Option<usize> {
        use redb::ReadableDatabase;
        let tx = self.0.begin_read().expect("begin_read");
        let t = tx.open_table(POSTS).expect("table");
        t.get(id).expect("get").map(|v| v.value().len())
    }
    fn newest(&mut self, author: u64, limit: usize) -> Vec<u64> {
        use redb::ReadableDatabase;
        let tx = self.0.begin_read().expect("begin_read");
        let t = tx.open_table(POSTS_BY_AUTHOR).expect("table");
        let range = t.range((author, 0)..(author, u64::MAX)).expect("range");
        range
            .rev()
            .take(limit)
            .map(|e| e.expect("entry").0.value().1)
            .collect()
    }
}

// --------------------------------------------------------------- fjall ----

pub struct Fjall {
    db: fjall::Database,
    posts: fjall::Keyspace,
    idx: fjall::Keyspace,
}

impl Store for Fjall {
    const NAME: &'static str = "fjall";
    fn open(dir: &Path) -> Self {
        let db = fjall::Database::builder(dir.join("fjall")).open().expect("fjall open");
        let posts = db
            .keyspace("posts", fjall::KeyspaceCreateOptions::default)
            .expect("keyspace");
        let idx = db
            .keyspace("posts_by_author", fjall::KeyspaceCreateOptions::default)
            .expect("keyspace");
        Fjall { db, posts, idx }
    }
    fn session(&self) -> Box<dyn Session + '_> {
        Box::new(FjallS(self))
    }
}

struct FjallS<'a>(&'a Fjall);

impl Session for FjallS<'_> {
    fn put(&mut self, items: &[Item]) {
        // A write batch is atomic across keyspaces; SyncAll fsyncs the
        // journal before commit returns.
        let f = self.0;
        let mut b = f.db.batch().durability(Some(fjall::PersistMode::SyncAll));
        for it in items {
            b.insert(&f.posts, &be(it.id)[..], it.doc.as_slice());
            b.insert(&f.idx, &idx_key(it.author, it.id)[..], &[][..]);
        }
        b.commit().expect("commit");
    }
    fn get(&mut self, id: u64) -> Option<usize> {
        use fjall::Readable;
        let snap = self.0.db.snapshot();
        snap.get(&self.0.posts, be(id)).expect("get").map(|v| v.len())
    }
    fn newest(&mut self, author: u64, limit: usize) -> Vec<u64> {
        use fjall::Readable;
        let snap = self.0.db.snapshot();
        let lo = idx_key(author, 0);
        let hi = idx_key(author, u64::MAX);
        snap.range(&self.0.idx, lo..hi)
            .rev()
            .take(limit)
            .map(|g| post_of(&g.key().expect("key")))
            .collect()
    }
}

// ---------------------------------------------------------------- sled ----

pub struct Sled {
    db: sled::Db,
    posts: sled::Tree,
    idx: sled::Tree,
}

impl Store for Sled {
    const NAME: &'static str = "sled";
    fn open(dir: &Path) -> Self {
        let db = sled::open(dir.join("sled")).expect("sled open");
        let posts = db.open_tree("posts").expect("tree");
        let idx = db.open_tree("posts_by_author").expect("tree");
        Sled { db, posts, idx }
    }
    fn session(&self) -> Box<dyn Session + '_> {
        Box::new(SledS(self))
    }
}

struct SledS<'a>(&'a Sled);

impl Session for SledS<'_> {
    fn put(&mut self, items: &[Item]) {
        use sled::transaction::ConflictableTransactionResult;
        use sled::Transactional;
        let s = self.0;
        (&s.posts, &s.idx)
            .transaction(|(p, i)| -> ConflictableTransactionResult<(), ()> {
                for it in items {
                    p.insert(&be(it.id)[..], it.doc.as_slice())?;
                    i.insert(&idx_key(it.author, it.id)[..], &[][..])?;
                }
                Ok(())
            })
            .expect("transaction");
        // One log for all trees: flush() fsyncs it.
        s.db.flush().expect("flush");
    }
    fn get(&mut self, id: u64) -> Option<usize> {
        self.0.posts.get(be(id)).expect("get").map(|v| v.len())
    }
    fn newest(&mut self, author: u64, limit: usize) -> Vec<u64> {
        let lo = idx_key(author, 0);
        let hi = idx_key(author, u64::MAX);
        self.0
            .idx
            .range(lo..hi)
            .rev()
            .take(limit)
            .map(|e| post_of(&e.expect("entry").0))
            .collect()
    }
}

// -------------------------------------------------------------- sqlite ----

pub struct Sqlite {
    path: std::path::PathBuf,
    // Keeps the database open (and the WAL in place) between sessions.
    _keep: std::sync::Mutex<rusqlite::Connection>,
}

fn sqlite_conn(path: &Path) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(path).expect("sqlite open");
    c.busy_timeout(std::time::Duration::from_secs(30)).expect("busy_timeout");
    c.pragma_update(None, "journal_mode", "WAL").expect("wal");
    c.pragma_update(None, "synchronous", "FULL").expect("sync");
    c
}

impl Store for Sqlite {
    const NAME: &'static str = "sqlite";
    fn open(dir: &Path) -> Self {
        let path = dir.join("bench.sqlite");
        let c = sqlite_conn(&path);
        c.execute_batch(
            "CREATE TABLE IF NOT EXISTS posts(id INTEGER PRIMARY KEY, doc BLOB NOT NULL);
             CREATE TABLE IF NOT EXISTS posts_by_author(author INTEGER NOT NULL, post INTEGER NOT NULL,
               PRIMARY KEY(author, post)) WITHOUT ROWID;",
        )
        .expect("schema");
        Sqlite { path, _keep: std::sync::Mutex::new(c) }
    }
    fn session(&self) -> Box<dyn Session + '_> {
        Box::new(SqliteS(sqlite_conn(&self.path)))
    }
}

struct SqliteS(rusqlite::Connection);

impl Session for SqliteS {
    fn put(&mut self, items: &[Item]) {
        let tx = self
            .0
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .expect("begin");
        {
            let mut p = tx.prepare_cached("INSERT INTO posts(id, doc) VALUES (?1, ?2)").expect("prep");
            let mut i = tx
                .prepare_cached("INSERT INTO posts_by_author(author, post) VALUES (?1, ?2)")
                .expect("prep");
            for it in items {
                p.execute(rusqlite::params![it.id as i64, it.doc]).expect("insert");
                i.execute(rusqlite::params![it.author as i64, it.id as i64]).expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    fn get(&mut self, id: u64) -> Option<usize> {
        use rusqlite::OptionalExtension;
        let mut st = self.0.prepare_cached("SELECT doc FROM posts WHERE id = ?1").expect("prep");
        st.query_row([id as i64], |r| r.get_ref(0).map(|v| v.as_blob().map(|b| b.len())))
            .optional()
            .expect("query")
            .map(|r| r.expect("blob"))
    }
    fn newest(&mut self, author: u64, limit: usize) -> Vec<u64> {
        let mut st = self
            .0
            .prepare_cached(
                "SELECT post FROM posts_by_author WHERE author = ?1 ORDER BY post DESC LIMIT ?2",
            )
            .expect("prep");
        let rows = st
            .query_map(rusqlite::params![author as i64, limit as i64], |r| r.get::<_, i64>(0))
            .expect("query");
        rows.map(|r| r.expect("row") as u64).collect()
    }
}
