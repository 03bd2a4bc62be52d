//! The media store's adapters against real storage: files in a folder (the
//! embedded default) and an S3-compatible server (SeaweedFS, which
//! scripts/test.sh starts and names in `MOMENTS_TEST_S3_*`). Both must
//! keep the port's promises alike.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use futures_util::StreamExt;
use moments::store::media_cache::CachedMedia;
use moments::store::objects::{ObjectMedia, S3Bucket};
use moments::store::{ByteRange, MediaStore};

async fn gather(
    mut body: futures_util::stream::BoxStream<'static, moments::store::StoreResult<Bytes>>,
) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        out.extend_from_slice(&chunk.unwrap());
    }
    out
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run scripts/test.sh, which starts SeaweedFS")
    })
}

fn s3() -> ObjectMedia {
    ObjectMedia::s3(&S3Bucket {
        endpoint: env("MOMENTS_TEST_S3_ENDPOINT"),
        bucket: env("MOMENTS_TEST_S3_BUCKET"),
        region: "us-east-1".into(),
        access_key_id: env("MOMENTS_TEST_S3_ACCESS_KEY_ID"),
        secret_access_key: env("MOMENTS_TEST_S3_SECRET_ACCESS_KEY"),
    })
    .unwrap()
}

/// A key no other run uses.
fn key(name: &str) -> String {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).unwrap();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}/{name}")
}

async fn keeps_its_promises(store: &dyn MediaStore) {
    let (original, preview) = (key("o.jpg"), key("p.jpg"));
    let bytes = Bytes::from((0..70_000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>());
    assert!(store.get(&original).await.unwrap().is_none(), "nothing yet");
    store.put(&original, bytes.clone()).await.unwrap();
    store
        .put(&preview, Bytes::from_static(b"small"))
        .await
        .unwrap();
    assert_eq!(store.get(&original).await.unwrap().unwrap(), bytes);
    assert_eq!(store.get(&preview).await.unwrap().unwrap(), "small");
    // Read as a stream, whole or a range of it.
    let whole = store.read(&original, None).await.unwrap().unwrap();
    assert_eq!((whole.len, whole.served), (70_000, Some((0, 69_999))));
    assert_eq!(gather(whole.body).await, bytes);
    let cases = [
        (ByteRange::FromTo(10, 19), Some((10, 19))),
        (ByteRange::From(69_990), Some((69_990, 69_999))),
        (ByteRange::Last(5), Some((69_995, 69_999))),
        (ByteRange::FromTo(65_000, 99_999), Some((65_000, 69_999))),
        (ByteRange::From(70_000), None),
    ];
    for (range, want) in cases {
        let part = store.read(&original, Some(range)).await.unwrap().unwrap();
        assert_eq!((part.len, part.served), (70_000, want), "{range:?}");
        let got = gather(part.body).await;
        match want {
            Some((a, b)) => assert_eq!(got, bytes[a as usize..=b as usize], "{range:?}"),
            None => assert!(got.is_empty()),
        }
    }
    assert!(store
        .read(&key("never-stored.jpg"), Some(ByteRange::Last(3)))
        .await
        .unwrap()
        .is_none());
    // Deleting takes what it names and leaves the rest; a key already gone
    // is not an error.
    store
        .delete(&[original.clone(), key("never-stored.jpg")])
        .await
        .unwrap();
    assert!(store.get(&original).await.unwrap().is_none());
    assert_eq!(store.get(&preview).await.unwrap().unwrap(), "small");
    store.delete(std::slice::from_ref(&preview)).await.unwrap();
    assert!(store.get(&preview).await.unwrap().is_none());
}

#[tokio::test]
async fn files_keep_the_media_stores_promises() {
    let dir = std::env::temp_dir().join(key("media"));
    keeps_its_promises(&ObjectMedia::files(&dir).unwrap()).await;
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

/// Copies held in memory in front of either store keep the same promises:
/// the 70 KB object is held after its first whole read, so its ranges are
/// cut from the copy, and a delete forgets it.
#[tokio::test]
async fn held_copies_keep_the_media_stores_promises() {
    let dir = std::env::temp_dir().join(key("media"));
    let files = CachedMedia::new(
        std::sync::Arc::new(ObjectMedia::files(&dir).unwrap()),
        1 << 20,
    );
    keeps_its_promises(&files).await;
    assert_eq!(files.held_bytes(), 0, "everything read was deleted");
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    let s3 = CachedMedia::new(std::sync::Arc::new(s3()), 1 << 20);
    keeps_its_promises(&s3).await;
    assert_eq!(s3.held_bytes(), 0);
}

/// The copies never take more than their budget, and what no longer fits
/// is still read from the store.
#[tokio::test]
async fn held_copies_stay_within_their_budget() {
    let dir = std::env::temp_dir().join(key("media"));
    let store = CachedMedia::new(
        std::sync::Arc::new(ObjectMedia::files(&dir).unwrap()),
        100_000,
    );
    let keys: Vec<String> = (0..5).map(|i| key(&format!("{i}.jpg"))).collect();
    for (i, k) in keys.iter().enumerate() {
        store
            .put(k, Bytes::from(vec![i as u8; 40_000]))
            .await
            .unwrap();
    }
    for _ in 0..2 {
        for (i, k) in keys.iter().enumerate() {
            let read = store.read(k, None).await.unwrap().unwrap();
            assert_eq!(gather(read.body).await, vec![i as u8; 40_000]);
            assert!(store.held_bytes() <= 100_000, "{}", store.held_bytes());
        }
    }
    assert_eq!(store.held_bytes(), 80_000, "the two newest fit");
    store.delete(&keys).await.unwrap();
    assert_eq!(store.held_bytes(), 0);
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

/// What a picture leaves in the folder: its files while it is stored;
/// nothing once it is deleted, not even a write that a crash cut short
/// (its aside file) or the picture's own folder.
#[tokio::test]
async fn deleted_files_leave_nothing_behind() {
    let dir = std::env::temp_dir().join(key("media"));
    let store = ObjectMedia::files(&dir).unwrap();
    let picture = key("original.jpg");
    let (folder, name) = picture.split_once('/').unwrap();
    store
        .put(&picture, Bytes::from_static(b"whole"))
        .await
        .unwrap();
    let listed = |path: std::path::PathBuf| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(
        listed(dir.join(folder)),
        [name],
        "no aside file once written"
    );
    // The preview's write was cut short by a crash: only its aside file.
    let preview = format!("{folder}/preview.jpg");
    std::fs::write(dir.join(folder).join("preview.jpg.writing"), b"hal").unwrap();
    assert!(
        store.get(&preview).await.unwrap().is_none(),
        "not a picture"
    );
    store.delete(&[picture, preview]).await.unwrap();
    assert!(listed(dir.clone()).is_empty(), "{:?}", listed(dir.clone()));
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

#[tokio::test]
async fn s3_keeps_the_media_stores_promises() {
    keeps_its_promises(&s3()).await;
}

#[tokio::test]
async fn an_s3_store_that_does_not_answer_is_unavailable() {
    let gone = ObjectMedia::s3(&S3Bucket {
        endpoint: "http://127.0.0.1:9".into(),
        bucket: "moments-test".into(),
        region: "us-east-1".into(),
        access_key_id: "k".into(),
        secret_access_key: "s".into(),
    })
    .unwrap();
    let err = gone.put(&key("o.jpg"), Bytes::from_static(b"x")).await;
    assert!(
        matches!(err, Err(moments::store::StoreError::Unavailable(_))),
        "{err:?}"
    );
}
