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
#[derive(Debug, Clone)]
pub struct S3Bucket {
    /// `http(s)://host:port` of the service; empty for AWS itself.
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
}

pub struct ObjectMedia {
    store: Arc<dyn ObjectStore>,
}

impl ObjectMedia {
    /// Files under `dir`, created if missing.
    pub fn files(dir: &std::path::Path) -> StoreResult<Self> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::Other(e.into()))?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(dir)
            .map_err(|e| StoreError::Other(e.into()))?;
        Ok(Self {
            store: Arc::new(store),
        })
    }

    /// A bucket of an S3-compatible service.
    pub fn s3(bucket: &S3Bucket) -> StoreResult<Self> {
        let mut builder = object_store::aws::AmazonS3Builder::new()
            .with_bucket_name(&bucket.bucket)
            .with_region(&bucket.region)
            .with_access_key_id(&bucket.access_key_id)
            .with_secret_access_key(&bucket.secret_access_key);
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
        match self.store.get(&path(key)?).await {
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
