//! The media store: files under a folder on the embedded default, or an
//! S3-compatible bucket at scale through the `object_store` crate. Both
//! write an object whole, which is the media port's promise: an S3 PUT is
//! atomic; a file is written aside, flushed to the disk, and renamed into
//! place, so an upload acknowledged survives a crash or a power cut as the
//! documents (which fsync every commit) do, and a write cut short leaves
//! only its aside file, which deleting the object removes too.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::ObjectStore;

use super::media::{ByteRange, MediaStore, Reading};
use super::{StoreError, StoreResult};

/// How much of a file one step of a `read` stream takes.
const FILE_CHUNK: usize = 256 * 1024;

/// Where an S3-compatible bucket is, and how to sign in to it.
#[derive(Clone, Default)]
pub struct S3Bucket {
    /// `http(s)://host:port` of the service; empty for AWS itself.
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
}

/// Shown without the secret, which settings and logs must never print.
impl std::fmt::Debug for S3Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Bucket")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"[redacted]")
            .finish()
    }
}

pub struct ObjectMedia {
    place: Place,
}

enum Place {
    /// Files under this folder, read and written here by hand: see `read`
    /// and `write_file`.
    Folder(std::path::PathBuf),
    Bucket(Arc<dyn ObjectStore>),
}

impl ObjectMedia {
    /// Files under `dir`, created if missing.
    pub fn files(dir: &std::path::Path) -> StoreResult<Self> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Other(e.into()))?;
        Ok(Self {
            place: Place::Folder(dir.to_path_buf()),
        })
    }

    /// A bucket of an S3-compatible service.
    pub fn s3(bucket: &S3Bucket) -> StoreResult<Self> {
        let mut builder = object_store::aws::AmazonS3Builder::new()
            .with_bucket_name(&bucket.bucket)
            .with_region(&bucket.region)
            .with_access_key_id(&bucket.access_key_id)
            .with_secret_access_key(&bucket.secret_access_key)
            // A store that does not answer must cost an upload seconds, not
            // the client's default minutes of retries: the client is told
            // 503 and tries again itself.
            .with_retry(object_store::RetryConfig {
                backoff: object_store::BackoffConfig::default(),
                max_retries: 2,
                retry_timeout: std::time::Duration::from_secs(5),
            })
            .with_client_options(
                object_store::ClientOptions::new()
                    .with_connect_timeout(std::time::Duration::from_secs(2))
                    .with_timeout(std::time::Duration::from_secs(30)),
            );
        if !bucket.endpoint.is_empty() {
            // A self-hosted service answers at one host for every bucket,
            // often over plain HTTP inside the deployment.
            builder = builder
                .with_endpoint(&bucket.endpoint)
                .with_allow_http(bucket.endpoint.starts_with("http://"))
                .with_virtual_hosted_style_request(false);
        }
        let store = builder.build().map_err(|e| StoreError::Other(e.into()))?;
        Ok(Self {
            place: Place::Bucket(Arc::new(store)),
        })
    }
}

fn path(key: &str) -> StoreResult<Path> {
    Path::parse(key).map_err(|e| StoreError::Other(e.into()))
}

fn classify(e: object_store::Error) -> StoreError {
    match e {
        object_store::Error::Generic { .. } => StoreError::Unavailable(e.into()),
        other => StoreError::Other(other.into()),
    }
}

#[async_trait]
impl MediaStore for ObjectMedia {
    async fn put(&self, key: &str, bytes: Bytes) -> StoreResult<()> {
        let path = path(key)?;
        match &self.place {
            Place::Folder(folder) => {
                // Two fsyncs cost milliseconds: off the async workers.
                let file = file_of(folder, &path);
                tokio::task::spawn_blocking(move || write_file(&file, &bytes))
                    .await
                    .map_err(|e| StoreError::Other(e.into()))?
                    .map_err(|e| StoreError::Other(e.into()))
            }
            Place::Bucket(store) => store
                .put(&path, bytes.into())
                .await
                .map(|_| ())
                .map_err(classify),
        }
    }

    async fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        let path = path(key)?;
        let store = match &self.place {
            // Read here, on the calling thread: see `read`.
            Place::Folder(folder) => {
                return match std::fs::read(file_of(folder, &path)) {
                    Ok(bytes) => Ok(Some(Bytes::from(bytes))),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(StoreError::Other(e.into())),
                }
            }
            Place::Bucket(store) => store,
        };
        match store.get(&path).await {
            Ok(got) => got.bytes().await.map(Some).map_err(classify),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(classify(e)),
        }
    }

    async fn read(&self, key: &str, range: Option<ByteRange>) -> StoreResult<Option<Reading>> {
        let path = path(key)?;
        let store = match &self.place {
            // A picture is a few dozen KB to a few MB, mostly in the page
            // cache: read here it costs microseconds a chunk, where the
            // crate's hand-off to the blocking pool and back cost more
            // than the read (measured: previews served at a third of
            // /healthz's rate that way, BENCHMARKS.md).
            Place::Folder(folder) => return read_file(&file_of(folder, &path), range),
            Place::Bucket(store) => store,
        };
        let (len, served) = match range {
            None => (None, None),
            Some(range) => {
                let len = match store.head(&path).await {
                    Ok(meta) => meta.size,
                    Err(object_store::Error::NotFound { .. }) => return Ok(None),
                    Err(e) => return Err(classify(e)),
                };
                let Some(served) = range.within(len) else {
                    return Ok(Some(unsatisfiable(len)));
                };
                (Some(len), Some(served))
            }
        };
        let options = object_store::GetOptions {
            range: served.map(|(first, last)| object_store::GetRange::Bounded(first..last + 1)),
            ..Default::default()
        };
        let got = match store.get_opts(&path, options).await {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(classify(e)),
        };
        let len = len.unwrap_or(got.meta.size);
        let served = Some((got.range.start, got.range.end.saturating_sub(1)));
        let body = got.into_stream().map_err(classify).boxed();
        Ok(Some(Reading { len, served, body }))
    }

    async fn delete(&self, keys: &[String]) -> StoreResult<()> {
        for key in keys {
            let path = path(key)?;
            match &self.place {
                Place::Folder(folder) => {
                    let file = file_of(folder, &path);
                    for gone in [aside(&file), file.clone()] {
                        match std::fs::remove_file(&gone) {
                            Ok(()) => {}
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                            Err(e) => return Err(StoreError::Other(e.into())),
                        }
                    }
                    // A picture's folder goes with its last file, else the
                    // media folder fills with empty ones; one that still
                    // holds a file refuses, which is the point.
                    if let Some(parent) = file.parent().filter(|p| p != folder) {
                        let _ = std::fs::remove_dir(parent);
                    }
                }
                Place::Bucket(store) => match store.delete(&path).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(classify(e)),
                },
            }
        }
        Ok(())
    }
}

/// Where `file` is written before it is renamed into place. A key is
/// written once (keys are random), so one name is enough, and a crash
/// mid-write leaves it where deleting the object finds it.
fn aside(file: &std::path::Path) -> std::path::PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".writing");
    name.into()
}

/// `bytes` as `file`, whole or not at all, on the disk before it returns:
/// the data is flushed before the rename, and the folder (and a new
/// folder's parent) after it, so neither a crash nor a power cut leaves a
/// named file short or missing.
fn write_file(file: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let folder = file.parent().unwrap_or(std::path::Path::new("."));
    if !folder.exists() {
        std::fs::create_dir_all(folder)?;
        // The new folder's own name, on the disk too.
        if let Some(above) = folder.parent() {
            std::fs::File::open(above)?.sync_all()?;
        }
    }
    let staged = aside(file);
    let mut out = std::fs::File::create(&staged)?;
    out.write_all(bytes)?;
    out.sync_all()?;
    drop(out);
    std::fs::rename(&staged, file)?;
    std::fs::File::open(folder)?.sync_all()
}

/// The file of `path` under `folder`: `Path` has refused `..` and empty
/// parts, so it is under the folder.
fn file_of(folder: &std::path::Path, path: &Path) -> std::path::PathBuf {
    path.parts()
        .fold(folder.to_path_buf(), |dir, part| dir.join(part.as_ref()))
}

fn unsatisfiable(len: u64) -> Reading {
    Reading {
        len,
        served: None,
        body: futures_util::stream::empty().boxed(),
    }
}

/// A file, or the range of it, read a chunk at a time as the body is sent.
fn read_file(file: &std::path::Path, range: Option<ByteRange>) -> StoreResult<Option<Reading>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut opened = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::Other(e.into())),
    };
    let len = opened
        .metadata()
        .map_err(|e| StoreError::Other(e.into()))?
        .len();
    let Some((first, last)) = range.unwrap_or(ByteRange::From(0)).within(len) else {
        return Ok(Some(unsatisfiable(len)));
    };
    opened
        .seek(SeekFrom::Start(first))
        .map_err(|e| StoreError::Other(e.into()))?;
    let left = last - first + 1;
    let body = futures_util::stream::unfold((opened, left), |(mut f, left)| async move {
        if left == 0 {
            return None;
        }
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(FILE_CHUNK);
        // Not zeroed first: read_to_end fills what it grows.
        let mut chunk = Vec::with_capacity(want);
        let read = (&mut f).take(want as u64).read_to_end(&mut chunk);
        let read = read.and_then(|n| {
            (n == want)
                .then_some(())
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))
        });
        match read {
            Ok(()) => Some((Ok(Bytes::from(chunk)), (f, left - want as u64))),
            // Cut short under the reader: end the body with an error
            // rather than send fewer bytes than were announced.
            Err(e) => Some((Err(StoreError::Other(e.into())), (f, 0))),
        }
    })
    .fuse()
    .boxed();
    Ok(Some(Reading {
        len,
        served: Some((first, last)),
        body,
    }))
}
