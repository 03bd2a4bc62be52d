//! The media store on the `object_store` crate: files under a folder on
//! the embedded default, or an S3-compatible bucket at scale. Both write
//! an object whole (a file is written aside and renamed into place; an S3
//! PUT is atomic), which is the media port's promise.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use object_store::path::Path;
use object_store::ObjectStore;

use super::media::MediaStore;
use super::{StoreError, StoreResult};

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
    store: Arc<dyn ObjectStore>,
    /// The folder, when the objects are files: read on the calling thread
    /// (see `get`).
    folder: Option<std::path::PathBuf>,
}

impl ObjectMedia {
    /// Files under `dir`, created if missing.
    pub fn files(dir: &std::path::Path) -> StoreResult<Self> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Other(e.into()))?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(dir)
            .map_err(|e| StoreError::Other(e.into()))?;
        Ok(Self {
            store: Arc::new(store),
            folder: Some(dir.to_path_buf()),
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
            store: Arc::new(store),
            folder: None,
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
        self.store
            .put(&path(key)?, bytes.into())
            .await
            .map(|_| ())
            .map_err(classify)
    }

    async fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        let path = path(key)?;
        if let Some(folder) = &self.folder {
            // A picture is a few dozen KB to a few MB, mostly in the page
            // cache: read here it costs microseconds, where the crate's
            // hand-off to the blocking pool and back cost more than the
            // read (measured: previews served at a third of /healthz's
            // rate that way, BENCHMARKS.md). `Path` has refused `..` and
            // empty parts, so the file is under the folder.
            let file = path
                .parts()
                .fold(folder.clone(), |dir, part| dir.join(part.as_ref()));
            return match std::fs::read(&file) {
                Ok(bytes) => Ok(Some(Bytes::from(bytes))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(StoreError::Other(e.into())),
            };
        }
        match self.store.get(&path).await {
            Ok(got) => got.bytes().await.map(Some).map_err(classify),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(classify(e)),
        }
    }

    async fn delete(&self, keys: &[String]) -> StoreResult<()> {
        for key in keys {
            match self.store.delete(&path(key)?).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(classify(e)),
            }
        }
        Ok(())
    }
}
