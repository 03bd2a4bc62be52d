//! Writing one archive: every file of it in turn, each read from the
//! stores in batches and compressed into the zip as it goes, the zip's
//! bytes cut into chunks and stored as they fill. Nothing holds more than
//! a batch of records and a chunk of bytes, however big the archive
//! (`Run::hold` and `Sink::peak`
//! are how a test counts that).
//!
//! The files are the account's own data only: other people appear by uid
//! and username, never by anything they wrote or chose (a nickname, an
//! avatar, a comment on one of the account's posts).

use std::collections::HashMap;
use std::io::{self, Write};

use flate2::write::DeflateEncoder;
use serde::Serialize;
use serde_json::Value;

use super::run::Run;
pub use super::sink::Sink;
use crate::domain::cursor::Cursor;
use crate::domain::media::Rendition;
use crate::error::{AppError, AppResult};
use crate::service::{accounts, posts, reports, Context, Presentation};
use crate::store::{FilterKind, LikeKind, MediaState, StoreError};

pub const README: &str = include_str!("assets/README.txt");
pub const INDEX_HTML: &str = include_str!("assets/index.html");
pub const VIEW_JS: &str = include_str!("assets/view.js");

/// The files, in the order they are written, with the words README.txt
/// and the web client say about them.
pub const FILES: &[&str] = &[
    "README.txt",
    "index.html",
    "view.js",
    "profile.json",
    "posts.json",
    "album.js",
    "comments.json",
    "likes.json",
    "favorites.json",
    "shares.json",
    "history.json",
    "following.csv",
    "blocks.csv",
    "mutes.csv",
    "hidden.csv",
    "labels.json",
    "sessions.json",
    "reports.json",
];

/// The folder of the originals of the pictures on the account's posts,
/// beside `FILES`: `media/{id}.jpg` (or `.png`), named in posts.json.
pub const MEDIA_FOLDER: &str = "media/";

/// Why a run stopped before the end.
#[derive(Debug, thiserror::Error)]
pub enum Stop {
    /// The export is no longer this run's (taken over, or deleted).
    #[error("the export was taken over or deleted")]
    Lost,
    /// The archive would pass `MOMENTS_EXPORT_MAX_BYTES`.
    #[error("the archive would be larger than {0} bytes")]
    TooLarge(u64),
    #[error(transparent)]
    Failed(#[from] AppError),
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        Stop::Failed(e.into())
    }
}

type Zip = rawzip::ZipArchiveWriter<Sink>;

/// One file of the zip being written: deflated, its size and CRC in a
/// data descriptor after it, as a writer that cannot seek back must.
struct Entry<'z> {
    data: rawzip::ZipDataWriter<DeflateEncoder<rawzip::ZipEntryWriter<'z, Sink>>>,
}

impl<'z> Entry<'z> {
    fn open(zip: &'z mut Zip, name: &str, at: i64) -> io::Result<Self> {
        Self::open_at_level(zip, name, at, flate2::Compression::new(6))
    }

    /// `open`, deflating at `level`: pictures are compressed already, and
    /// deflating them again costs CPU for nothing.
    fn open_at_level(
        zip: &'z mut Zip,
        name: &str,
        at: i64,
        level: flate2::Compression,
    ) -> io::Result<Self> {
        let (entry, config) = zip
            .new_file(name)
            .compression_method(rawzip::CompressionMethod::Deflate)
            .last_modified(rawzip::time::UtcDateTime::from_unix(at / 1000))
            .unix_permissions(0o644)
            .start()
            .map_err(io::Error::other)?;
        let encoder = DeflateEncoder::new(entry, level);
        Ok(Entry {
            data: config.wrap(encoder),
        })
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.data.write_all(bytes)
    }

    fn close(self) -> io::Result<()> {
        let (encoder, out) = self.data.finish().map_err(io::Error::other)?;
        let entry = encoder.finish()?;
        entry.finish(out).map_err(io::Error::other)?;
        Ok(())
    }
}

/// A JSON array written one record per line, as its records come.
struct JsonLines<'z> {
    entry: Entry<'z>,
    first: bool,
}

impl<'z> JsonLines<'z> {
    fn open(zip: &'z mut Zip, name: &str, at: i64) -> io::Result<Self> {
        let mut entry = Entry::open(zip, name, at)?;
        entry.put(b"[")?;
        Ok(JsonLines { entry, first: true })
    }

    fn record(&mut self, record: &impl Serialize) -> io::Result<()> {
        let bytes = serde_json::to_vec(record).map_err(io::Error::other)?;
        self.raw(&bytes)
    }

    fn raw(&mut self, json: &[u8]) -> io::Result<()> {
        self.entry.put(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        self.entry.put(json)
    }

    fn close(mut self) -> io::Result<()> {
        self.entry.put(b"\n]\n")?;
        self.entry.close()
    }
}

/// A write of the zip that failed; `write` tells the sink's refusal
/// (`TooLarge`) from the rest.
fn io_stop(e: io::Error) -> Stop {
    Stop::Failed(AppError::Internal(anyhow::anyhow!(
        "writing the archive: {e}"
    )))
}

/// Someone the archive names: by uid and username, nothing more.
#[derive(Debug, Clone, Serialize)]
pub struct Person {
    pub uid: i64,
    pub username: Option<String>,
}

fn person(names: &HashMap<i64, String>, uid: i64) -> Person {
    Person {
        uid,
        username: names.get(&uid).cloned(),
    }
}

/// A post as the archive keeps it: what the author's own album shows of
/// it, without anything of other people's (the latest comments and likers
/// are theirs; the counts stay).
fn archived_post(
    post: &Value,
    labels: &HashMap<i64, String>,
    names: &HashMap<i64, String>,
) -> Value {
    let field = |name: &str| post.get(name).cloned().unwrap_or(Value::Null);
    let audience = post.get("audience").filter(|a| !a.is_null()).map(|a| {
        let ids = |key: &str| -> Vec<i64> {
            a.get(key)
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_i64).collect())
                .unwrap_or_default()
        };
        serde_json::json!({
            "labels": ids("labels")
                .into_iter()
                .map(|id| serde_json::json!({ "id": id, "name": labels.get(&id) }))
                .collect::<Vec<_>>(),
            "users": ids("uids")
                .into_iter()
                .map(|uid| person(names, uid))
                .collect::<Vec<_>>(),
        })
    });
    serde_json::json!({
        "id": field("id"),
        "createdAt": field("createtime"),
        "category": field("category"),
        "content": field("content"),
        "pictureUrls": field("pictureUrls"),
        "media": archived_media(&field("media")),
        "device": { "model": field("deviceModel"), "name": field("device") },
        "place": field("geo"),
        "visibility": field("visibility"),
        "audience": audience,
        "moderation": field("moderation"),
        "likeCount": field("likeCount"),
        "commentCount": field("commentCount"),
        "shareCount": field("shareCount"),
        "viewCount": field("viewCount"),
    })
}

/// Where the archive keeps an uploaded picture's original, by its id and
/// the extension its URL ends with.
pub fn media_file(id: i64, extension: &str) -> String {
    format!("{MEDIA_FOLDER}{id}.{extension}")
}

/// A post's uploaded pictures as the archive keeps them: each original's
/// file in the archive, with its size, alt text and focus.
fn archived_media(media: &Value) -> Value {
    let Some(list) = media.as_array() else {
        return Value::Array(Vec::new());
    };
    Value::Array(
        list.iter()
            .map(|m| {
                let extension = m["url"]
                    .as_str()
                    .and_then(|u| u.rsplit_once('.'))
                    .map_or("jpg", |(_, ext)| ext);
                serde_json::json!({
                    "file": media_file(m["id"].as_i64().unwrap_or_default(), extension),
                    "width": m["width"],
                    "height": m["height"],
                    "description": m["description"],
                    "focus": m["focus"],
                })
            })
            .collect(),
    )
}

/// The uids an audience names, for one batch's username read.
fn audience_uids(post: &Value) -> Vec<i64> {
    post.get("audience")
        .and_then(|a| a.get("uids"))
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default()
}

/// A local spill of the posts' records, read back into album.js: the
/// album page needs them as a script (a page opened from a file may not
/// read the JSON beside it), and reading the stores twice would cost more
/// than a file on this instance's disk. The file is unlinked as soon as
/// it is made, so nothing of it outlives the run, even a `kill -9`; made
/// new under a random name, so no link planted in the temp directory is
/// followed.
struct Spill {
    file: io::BufWriter<std::fs::File>,
}

impl Spill {
    fn create() -> io::Result<Self> {
        let mut raw = [0u8; 12];
        getrandom::getrandom(&mut raw).map_err(io::Error::other)?;
        let name: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        let path = std::env::temp_dir().join(format!("moments-export-{name}"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        std::fs::remove_file(&path)?;
        Ok(Spill {
            file: io::BufWriter::new(file),
        })
    }

    /// What was written, from the start.
    fn reader(self) -> io::Result<io::BufReader<std::fs::File>> {
        let mut file = self.file.into_inner().map_err(|e| e.into_error())?;
        io::Seek::seek(&mut file, io::SeekFrom::Start(0))?;
        Ok(io::BufReader::new(file))
    }
}

/// Stores the sink's whole chunks (all that is left, with `last`), and
/// gives up when the run lost its export.
async fn store_chunks(ctx: &Context, run: &Run, sink: &Sink, last: bool) -> Result<(), Stop> {
    for chunk in sink.take_chunks(run.chunk_bytes, last) {
        if run.lost() {
            return Err(Stop::Lost);
        }
        let e = &run.export;
        if !ctx
            .docs
            .put_export_chunk(e.uid, e.id, e.attempt, run.next_chunk(), &chunk)
            .await?
        {
            return Err(Stop::Lost);
        }
    }
    Ok(())
}

/// Between two batches: the chunks filled so far go to the store, and the
/// pause the settings ask for is taken.
async fn between_batches(ctx: &Context, run: &Run, sink: &Sink) -> Result<(), Stop> {
    store_chunks(ctx, run, sink, false).await?;
    if run.lost() {
        return Err(Stop::Lost);
    }
    let pause = ctx.settings.exports.pause_ms;
    if pause > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
    }
    Ok(())
}

/// A cell a spreadsheet will not run as a formula: one that starts with
/// `=`, `+`, `-`, `@` or a tab gets a `'` in front (OWASP's advice), which
/// import takes off again.
pub fn spreadsheet_safe(cell: &str) -> String {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{cell}")
    } else {
        cell.to_string()
    }
}

/// A CSV of people, in the format import reads (`Account address` first,
/// as Mastodon's exports have it).
fn people_csv(rows: &[(Person, i64)]) -> Result<Vec<u8>, Stop> {
    let mut out = csv::Writer::from_writer(Vec::new());
    let failed = |e: csv::Error| Stop::Failed(AppError::Internal(e.into()));
    out.write_record(["Account address", "uid", "since"])
        .map_err(failed)?;
    for (p, since) in rows {
        out.write_record([
            spreadsheet_safe(p.username.as_deref().unwrap_or_default()),
            p.uid.to_string(),
            crate::domain::calendar::utc_text(*since),
        ])
        .map_err(failed)?;
    }
    out.into_inner()
        .map_err(|e| Stop::Failed(AppError::Internal(anyhow::anyhow!("{e}"))))
}

/// Writes the whole archive of `run`'s account; its size once the last
/// chunk is stored.
pub async fn write(ctx: &Context, run: &Run) -> Result<u64, Stop> {
    let uid = run.export.uid;
    let at = run.export.created_at;
    let batch = ctx.settings.exports.batch;
    let sink = Sink::new(ctx.settings.exports.max_bytes);
    run.watch_sink(&sink);
    let mut zip: Zip = rawzip::ZipArchiveWriter::new(sink.clone());
    let written = match write_files(ctx, run, &mut zip, &sink, uid, at, batch).await {
        Ok(()) => zip
            .finish()
            .map(|_| ())
            .map_err(|e| io_stop(io::Error::other(e))),
        Err(e) => Err(e),
    };
    match written {
        Err(_) if sink.refused() => Err(Stop::TooLarge(ctx.settings.exports.max_bytes)),
        Err(e) => Err(e),
        Ok(()) => {
            store_chunks(ctx, run, &sink, true).await?;
            Ok(sink.written())
        }
    }
}

async fn write_files(
    ctx: &Context,
    run: &Run,
    zip: &mut Zip,
    sink: &Sink,
    uid: i64,
    at: i64,
    batch: usize,
) -> Result<(), Stop> {
    let whole = |zip: &mut Zip, name: &str, bytes: &[u8]| -> Result<(), Stop> {
        let mut e = Entry::open(zip, name, at).map_err(io_stop)?;
        e.put(bytes).map_err(io_stop)?;
        e.close().map_err(io_stop)
    };
    let pretty = |v: &dyn erased::Json| -> Result<Vec<u8>, Stop> {
        v.pretty()
            .map_err(|e| Stop::Failed(AppError::Internal(e.into())))
    };
    whole(zip, "README.txt", README.as_bytes())?;
    whole(zip, "index.html", INDEX_HTML.as_bytes())?;
    whole(zip, "view.js", VIEW_JS.as_bytes())?;

    let me = accounts::me(ctx, uid).await?;
    let profile = pretty(&me)?;
    whole(zip, "profile.json", &profile)?;
    run.add(1, 1);

    // posts.json, and the same records spilled for album.js.
    let labels: HashMap<i64, String> = ctx
        .docs
        .labels_of(uid, crate::domain::label::MAX_LABELS)
        .await?
        .into_iter()
        .map(|l| (l.id, l.name))
        .collect();
    let mut spill = Spill::create().map_err(io_stop)?;
    let pres = Presentation {
        lang: None,
        tz: Default::default(),
        now: crate::ids::now_ms(),
    };
    {
        let mut posts_json = JsonLines::open(zip, "posts.json", at).map_err(io_stop)?;
        let mut cursor: Option<Cursor> = None;
        let mut first = true;
        loop {
            let page = posts::album(ctx, uid, Some(uid), cursor, batch, &pres).await?;
            let _held = run.hold(page.items.len());
            run.add(0, page.items.len() as i64);
            let values: Vec<Value> = page
                .items
                .iter()
                .map(|p| serde_json::from_slice(&p.json).map_err(|e| AppError::Internal(e.into())))
                .collect::<AppResult<_>>()?;
            let named: Vec<i64> = values.iter().flat_map(audience_uids).collect();
            let names = accounts::usernames_of(ctx, &named).await?;
            for v in &values {
                let record = serde_json::to_vec(&archived_post(v, &labels, &names))
                    .map_err(|e| Stop::Failed(AppError::Internal(e.into())))?;
                posts_json.raw(&record).map_err(io_stop)?;
                spill
                    .file
                    .write_all(if first { b"\n" } else { b",\n" })
                    .and_then(|()| spill.file.write_all(&record))
                    .map_err(io_stop)?;
                first = false;
                run.add(1, 0);
            }
            between_batches(ctx, run, sink).await?;
            match page.next_cursor.as_deref().map(Cursor::parse) {
                Some(Ok(c)) => cursor = Some(c),
                _ => break,
            }
        }
        posts_json.close().map_err(io_stop)?;
    }
    {
        let mut read = spill.reader().map_err(io_stop)?;
        let mut album = Entry::open(zip, "album.js", at).map_err(io_stop)?;
        album
            .put(b"// The album index.html shows: profile.json and posts.json as a script,\n// because a page opened from a file may not read the files beside it.\nwindow.momentsArchive = {\"profile\": ")
            .map_err(io_stop)?;
        album.put(&profile).map_err(io_stop)?;
        album.put(b",\n\"posts\": [").map_err(io_stop)?;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = io::Read::read(&mut read, &mut buf).map_err(io_stop)?;
            if n == 0 {
                break;
            }
            album.put(&buf[..n]).map_err(io_stop)?;
            store_chunks(ctx, run, sink, false).await?;
        }
        album.put(b"\n]};\n").map_err(io_stop)?;
        album.close().map_err(io_stop)?;
    }

    // media/: the originals of the pictures on the account's posts, one
    // at a time (each is capped on its long side: a few MB at most).
    let mut after = None;
    loop {
        let page = ctx.docs.media_of(uid, after, batch).await?;
        let Some(last) = page.last() else { break };
        after = Some(last.id);
        for doc in &page {
            let on_a_post = matches!(doc.state, MediaState::Attached | MediaState::Posted);
            if !on_a_post {
                continue;
            }
            let m = &doc.media;
            let object = m.key.object(Rendition::Original, m.encoding);
            // Gone from the store (its post deleted as this ran): nothing
            // to keep.
            let Some(bytes) = ctx.media.store.get(&object).await? else {
                continue;
            };
            let _held = run.hold(1);
            let name = media_file(m.id, m.encoding.extension());
            let mut e = Entry::open_at_level(zip, &name, at, flate2::Compression::fast())
                .map_err(io_stop)?;
            e.put(&bytes).map_err(io_stop)?;
            e.close().map_err(io_stop)?;
            store_chunks(ctx, run, sink, false).await?;
        }
        between_batches(ctx, run, sink).await?;
        if page.len() < batch {
            break;
        }
    }

    // comments.json: the account's comments, with their post and whom
    // they answer.
    let pages = Pages {
        ctx,
        run,
        sink,
        at,
        batch,
    };
    pages
        .json_file(
            zip,
            "comments.json",
            |before, n| ctx.docs.comments_by_author(uid, before, n),
            |c| c.id,
            |page| async move {
                let mut post_ids: Vec<i64> = page.iter().map(|c| c.post_id).collect();
                post_ids.sort_unstable();
                post_ids.dedup();
                let authors: HashMap<i64, i64> = ctx
                    .docs
                    .posts_by_ids(&post_ids)
                    .await?
                    .into_iter()
                    .map(|p| (p.id, p.author_uid))
                    .collect();
                let mut people: Vec<i64> = authors.values().copied().collect();
                people.extend(page.iter().filter_map(|c| c.reply_to.map(|r| r.uid)));
                let names = accounts::usernames_of(ctx, &people).await?;
                Ok(page
                    .iter()
                    .map(|c| {
                        serde_json::json!({
                            "id": c.id,
                            "postId": c.post_id,
                            "postAuthor": authors.get(&c.post_id).map(|a| person(&names, *a)),
                            "content": c.content,
                            "createdAt": c.createtime,
                            "replyTo": c.reply_to.map(|r| serde_json::json!({
                                "commentId": r.comment_id,
                                "author": person(&names, r.uid),
                            })),
                            "threadId": c.thread_id,
                        })
                    })
                    .collect())
            },
        )
        .await?;
    pages
        .json_file(
            zip,
            "likes.json",
            |before, n| ctx.docs.likes_by_user(uid, before, n),
            |l| l.id,
            |page| async move {
                Ok(page
                    .iter()
                    .map(|l| {
                        let target = match l.kind {
                            LikeKind::Post => "postId",
                            LikeKind::Comment => "commentId",
                        };
                        let mut record = serde_json::json!({
                            "id": l.id,
                            "kind": l.kind.as_str(),
                            "createdAt": l.create_time,
                        });
                        record[target] = l.target_id.into();
                        record
                    })
                    .collect())
            },
        )
        .await?;
    pages
        .json_file(
            zip,
            "favorites.json",
            |before, n| ctx.docs.favorites_page(uid, before, n),
            |f| f.id,
            |page| async move {
                Ok(page
                    .iter()
                    .map(|f| serde_json::json!({ "id": f.id, "postId": f.post_id, "createdAt": f.created_at }))
                    .collect())
            },
        )
        .await?;
    pages
        .json_file(
            zip,
            "shares.json",
            |before, n| ctx.docs.shares_by_user(uid, before, n),
            |s| s.id,
            |page| async move {
                Ok(page
                    .iter()
                    .map(|s| {
                        serde_json::json!({
                            "id": s.id, "postId": s.post_id, "platform": s.platform, "createdAt": s.created_at,
                        })
                    })
                    .collect())
            },
        )
        .await?;
    // history.json: the views the account's history still keeps.
    let since = crate::ids::now_ms() - crate::service::jobs::post_views::HISTORY_MS;
    pages
        .json_file(
            zip,
            "history.json",
            |before, n| ctx.docs.views_page(uid, since, before, n),
            |v| v.id,
            |page| async move {
                Ok(page
                    .iter()
                    .map(|v| serde_json::json!({ "id": v.id, "postId": v.post_id, "viewedAt": v.created_at }))
                    .collect())
            },
        )
        .await?;

    // The CSVs of people: each list is capped by its setting
    // (MOMENTS_MAX_FOLLOWING, MOMENTS_MAX_BLOCKS), so read whole.
    let following = all_pages(
        batch,
        |before, n| ctx.docs.following_page(uid, before, n),
        |f| f.id,
    )
    .await?;
    let rows: Vec<(i64, i64)> = following
        .iter()
        .map(|f| (f.followee, f.created_at))
        .collect();
    write_people(ctx, run, zip, "following.csv", at, &rows).await?;
    let rows: Vec<(i64, i64)> = ctx
        .docs
        .blocks_by(&[uid])
        .await?
        .into_iter()
        .map(|b| (b.blocked, b.created_at))
        .collect();
    write_people(ctx, run, zip, "blocks.csv", at, &rows).await?;
    for (kind, name) in [
        (FilterKind::Mute, "mutes.csv"),
        (FilterKind::Hide, "hidden.csv"),
    ] {
        let set = all_pages(
            batch,
            |before, n| ctx.docs.filters_page(kind, uid, before, n),
            |f| f.id,
        )
        .await?;
        let rows: Vec<(i64, i64)> = set.iter().map(|f| (f.other, f.created_at)).collect();
        write_people(ctx, run, zip, name, at, &rows).await?;
    }
    between_batches(ctx, run, sink).await?;

    // labels.json: bounded by MAX_LABELS, each by its member cap.
    {
        let labels = ctx
            .docs
            .labels_of(uid, crate::domain::label::MAX_LABELS)
            .await?;
        let _held = run.hold(labels.len());
        let members: Vec<i64> = labels.iter().flat_map(|l| l.members.clone()).collect();
        let names = accounts::usernames_of(ctx, &members).await?;
        let records: Vec<Value> = labels
            .iter()
            .map(|l| {
                serde_json::json!({
                    "id": l.id,
                    "name": l.name,
                    "members": l.members.iter().map(|m| person(&names, *m)).collect::<Vec<_>>(),
                    "createdAt": l.created_at,
                    "updatedAt": l.updated_at,
                })
            })
            .collect();
        run.add(records.len() as i64, records.len() as i64);
        let bytes = pretty(&records)?;
        whole(zip, "labels.json", &bytes)?;
    }
    // sessions.json: the devices signed in, no token or hash of one.
    {
        let sessions = accounts::sessions_of(ctx, uid, None, crate::ids::now_ms()).await?;
        let _held = run.hold(sessions.len());
        let records: Vec<Value> = sessions
            .iter()
            .map(|s| {
                serde_json::json!({
                    "id": s.id, "device": s.device, "createdAt": s.created_at,
                    "lastSeenAt": s.last_seen_at, "expiresAt": s.expires_at,
                })
            })
            .collect();
        run.add(records.len() as i64, records.len() as i64);
        let bytes = pretty(&records)?;
        whole(zip, "sessions.json", &bytes)?;
    }
    // reports.json, where the account made any.
    {
        let per_page = batch.min(100);
        let mut page = reports::mine(ctx, uid, None, per_page).await?;
        if !page.items.is_empty() {
            let mut out = JsonLines::open(zip, "reports.json", at).map_err(io_stop)?;
            loop {
                let _held = run.hold(page.items.len());
                run.add(0, page.items.len() as i64);
                for r in &page.items {
                    out.record(r).map_err(io_stop)?;
                    run.add(1, 0);
                }
                between_batches(ctx, run, sink).await?;
                let Some(Ok(cursor)) = page.next_cursor.as_deref().map(Cursor::parse) else {
                    break;
                };
                page = reports::mine(ctx, uid, Some(cursor), per_page).await?;
                if page.items.is_empty() {
                    break;
                }
            }
            out.close().map_err(io_stop)?;
        }
    }
    Ok(())
}

/// What paging a kind of record into the archive needs.
struct Pages<'a> {
    ctx: &'a Context,
    run: &'a Run,
    sink: &'a Sink,
    at: i64,
    batch: usize,
}

impl Pages<'_> {
    /// A JSON file of records read a batch at a time below a keyset cursor
    /// (`read(before, n)`, newest first), each batch turned into records by
    /// `records` (which may read what they name), the chunks that filled
    /// stored between batches.
    async fn json_file<T, R, RF, M, MF>(
        &self,
        zip: &mut Zip,
        name: &str,
        mut read: R,
        id_of: impl Fn(&T) -> i64,
        mut records: M,
    ) -> Result<(), Stop>
    where
        R: FnMut(Option<i64>, usize) -> RF,
        RF: std::future::Future<Output = crate::store::StoreResult<Vec<T>>>,
        M: FnMut(Vec<T>) -> MF,
        MF: std::future::Future<Output = AppResult<Vec<Value>>>,
    {
        let mut out = JsonLines::open(zip, name, self.at).map_err(io_stop)?;
        let mut before = None;
        loop {
            let page = read(before, self.batch).await?;
            let _held = self.run.hold(page.len());
            let (n, next) = (page.len(), page.last().map(&id_of));
            self.run.add(0, n as i64);
            for record in records(page).await? {
                out.record(&record).map_err(io_stop)?;
                self.run.add(1, 0);
            }
            between_batches(self.ctx, self.run, self.sink).await?;
            if n < self.batch {
                break;
            }
            before = next;
        }
        out.close().map_err(io_stop)
    }
}

/// Every record of a list capped by a setting, read a batch at a time.
async fn all_pages<T, R, RF>(
    batch: usize,
    mut read: R,
    id_of: impl Fn(&T) -> i64,
) -> Result<Vec<T>, Stop>
where
    R: FnMut(Option<i64>, usize) -> RF,
    RF: std::future::Future<Output = crate::store::StoreResult<Vec<T>>>,
{
    let mut all = Vec::new();
    let mut before = None;
    loop {
        let page = read(before, batch).await?;
        let (n, next) = (page.len(), page.last().map(&id_of));
        all.extend(page);
        if n < batch {
            return Ok(all);
        }
        before = next;
    }
}

/// One of the CSVs of people: usernames read in one batch per call (the
/// lists are capped by their settings).
async fn write_people(
    ctx: &Context,
    run: &Run,
    zip: &mut Zip,
    name: &str,
    at: i64,
    rows: &[(i64, i64)],
) -> Result<(), Stop> {
    // The whole list is held (each is capped by its setting).
    let _held = run.hold(rows.len());
    run.add(0, rows.len() as i64);
    let mut people = Vec::with_capacity(rows.len());
    for part in rows.chunks(1000) {
        let uids: Vec<i64> = part.iter().map(|(u, _)| *u).collect();
        let names = accounts::usernames_of(ctx, &uids).await?;
        people.extend(part.iter().map(|(u, since)| (person(&names, *u), *since)));
    }
    let bytes = people_csv(&people)?;
    let mut e = Entry::open(zip, name, at).map_err(io_stop)?;
    e.put(&bytes).map_err(io_stop)?;
    e.close().map_err(io_stop)?;
    run.add(rows.len() as i64, 0);
    Ok(())
}

/// Pretty JSON of any serializable value, behind one object-safe trait
/// so a closure can take any of them.
mod erased {
    pub trait Json {
        fn pretty(&self) -> serde_json::Result<Vec<u8>>;
    }
    impl<T: serde::Serialize> Json for T {
        fn pretty(&self) -> serde_json::Result<Vec<u8>> {
            serde_json::to_vec_pretty(self)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::spreadsheet_safe;

    #[test]
    fn a_cell_a_spreadsheet_would_run_gets_a_quote_in_front() {
        for (cell, written) in [
            ("wangwu", "wangwu"),
            ("-1-1", "'-1-1"),
            ("=cmd", "'=cmd"),
            ("+86", "'+86"),
            ("@home", "'@home"),
            ("\tx", "'\tx"),
            ("a-b", "a-b"),
            ("", ""),
        ] {
            assert_eq!(spreadsheet_safe(cell), written, "{cell:?}");
        }
    }
}
