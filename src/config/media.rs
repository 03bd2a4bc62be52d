//! Media (`MOMENTS_MEDIA_*`, `MOMENTS_S3_*`): what an upload may be, what
//! is kept of it, where its bytes go and where clients fetch them.

use super::*;

pub(super) const VARIABLES: &[Variable] = &[
    Variable {
        name: "MOMENTS_MEDIA_MAX_BYTES",
        default: DefaultValue::Literal("16777216"),
        allowed: "a whole number of bytes, 1024 to 268435456",
        meaning: "the largest file an upload may send (413 past it, read no further)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.media.max_bytes = whole_usize(v, 1024, 256 << 20)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MEDIA_MAX_PIXELS",
        default: DefaultValue::Literal("50000000"),
        allowed: "a whole number of pixels, 1 to 400000000",
        meaning: "the most pixels (width × height) an uploaded picture may have, read from its \
                  header before any is decoded (422 past it)",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.media.max_pixels = whole(v, 1, 400_000_000)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MEDIA_ORIGINAL_SIDE",
        default: DefaultValue::Literal("4096"),
        allowed: "a whole number of pixels, 64 to 20000",
        meaning: "the longest side a stored original keeps; larger pictures are scaled down to it",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.media.original_side = whole(v, 64, 20_000)? as u32;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MEDIA_PREVIEW_SIDE",
        default: DefaultValue::Literal("480"),
        allowed: "a whole number of pixels, 32 to 2048",
        meaning: "the shorter side of a picture's preview, the grid's thumbnail",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.media.preview_side = whole(v, 32, 2048)? as u32;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MEDIA_UNATTACHED_HOURS",
        default: DefaultValue::Literal("24"),
        allowed: "a whole number of hours, 1 to 720",
        meaning: "how long an uploaded picture that no post took is kept before it is deleted",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.media.unattached_hours = whole(v, 1, 720)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MEDIA_UPLOADS",
        default: DefaultValue::Literal("16"),
        allowed: "a whole number, 1 to 1024",
        meaning: "uploads one instance receives at once; more are answered 503 with Retry-After \
                  before their bytes are read, so memory stays bounded",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.media.uploads = whole_usize(v, 1, 1024)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MEDIA_UPLOADS_PER_ACCOUNT",
        default: DefaultValue::Literal("4"),
        allowed: "a whole number, 1 to 1024",
        meaning: "of those, how many one account may have at once (429 with Retry-After past \
                  it), so that a few slow uploads of one account cannot take every place",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.media.uploads_per_account = whole_usize(v, 1, 1024)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MEDIA_RECEIVE_SECONDS",
        default: DefaultValue::Literal("300"),
        allowed: "a whole number of seconds, 5 to 3600",
        meaning: "how long an upload's body may take to arrive, and at most 30 s may pass \
                  without a byte of it (408 past either): a client that sends a byte a minute \
                  does not keep its place for ever",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.media.receive_secs = whole(v, 5, 3600)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MEDIA_CACHE_BYTES",
        default: DefaultValue::Literal("33554432"),
        allowed: "a whole number of bytes, 0 to 4294967296",
        meaning: "memory for copies of small stored pictures (previews, up to 256 KiB each), \
                  served without reading the store; the oldest go first, each is kept a minute \
                  at most (so another instance's delete reaches this one), 0 keeps none",
        echo: Echo::Plain,
        apply: |d, v| {
            d.settings.media.cache_bytes = whole_usize(v, 0, 4 << 30)?;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_MEDIA_BASE_URL",
        default: DefaultValue::Literal("/media"),
        allowed: "a path starting with / or an http(s):// URL, without spaces",
        meaning: "what media URLs start with: this server's /media by default, or a CDN (or the \
                  bucket itself) that serves the same objects",
        echo: Echo::Plain,
        apply: |d, v| {
            let v = v.trim();
            let ok = (v.starts_with('/') || url(v, &["http://", "https://"]).is_ok())
                && !v.contains(char::is_whitespace)
                && !v.contains(['?', '#']);
            if !ok {
                return Err(Refused::default());
            }
            d.settings.media.base_url = v.trim_end_matches('/').to_string();
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_S3_BUCKET",
        default: DefaultValue::Described("unset"),
        allowed: "a bucket name of 3 to 63 lowercase letters, digits, dots and hyphens",
        meaning: "an S3-compatible bucket for media; unset, media are files under \
                  MOMENTS_DATA_DIR/media, served by this server",
        echo: Echo::Plain,
        apply: |d, v| {
            let v = v.trim();
            let ok = (3..=63).contains(&v.len())
                && v.bytes()
                    .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-'));
            if !ok {
                return Err(Refused::default());
            }
            d.s3.bucket = v.to_string();
            d.s3_given = true;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_S3_ENDPOINT",
        default: DefaultValue::Described("AWS"),
        allowed: "an http:// or https:// URL",
        meaning: "the S3-compatible service (SeaweedFS, Ceph, R2, ...); unset, AWS S3 itself",
        echo: Echo::Credentials,
        apply: |d, v| {
            d.s3.endpoint = url(v, &["http://", "https://"])?;
            d.s3_given = true;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_S3_REGION",
        default: DefaultValue::Literal("us-east-1"),
        allowed: "a region name of letters, digits and hyphens",
        meaning: "the bucket's region",
        echo: Echo::Plain,
        apply: |d, v| {
            let v = v.trim();
            if v.is_empty()
                || v.len() > 64
                || !v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            {
                return Err(Refused::default());
            }
            d.s3.region = v.to_string();
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_S3_ACCESS_KEY_ID",
        default: DefaultValue::Described("unset"),
        allowed: "1 to 128 characters without spaces",
        meaning: "the access key the bucket is written with",
        echo: Echo::Plain,
        apply: |d, v| {
            let v = v.trim();
            if v.len() > 128 || v.contains(char::is_whitespace) {
                return Err(Refused::default());
            }
            d.s3.access_key_id = v.to_string();
            d.s3_given = true;
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_S3_SECRET_ACCESS_KEY",
        default: DefaultValue::Described("unset"),
        allowed: "1 to 256 characters without spaces",
        meaning: "that access key's secret",
        echo: Echo::Secret,
        apply: |d, v| {
            let v = v.trim();
            if v.len() > 256 || v.contains(char::is_whitespace) {
                return Err(Refused::default());
            }
            d.s3.secret_access_key = v.to_string();
            d.s3_given = true;
            Ok(())
        },
    },
];

/// The S3 settings, once all are read: a bucket with both keys, or none.
pub(super) fn settle_s3(d: &Draft, errors: &mut Vec<String>) -> Option<S3Bucket> {
    if !d.s3_given {
        return None;
    }
    let missing: Vec<&str> = [
        ("MOMENTS_S3_BUCKET", &d.s3.bucket),
        ("MOMENTS_S3_ACCESS_KEY_ID", &d.s3.access_key_id),
        ("MOMENTS_S3_SECRET_ACCESS_KEY", &d.s3.secret_access_key),
    ]
    .into_iter()
    .filter(|(_, v)| v.is_empty())
    .map(|(name, _)| name)
    .collect();
    if missing.is_empty() {
        Some(d.s3.clone())
    } else {
        errors.push(format!(
            "media in S3 needs MOMENTS_S3_BUCKET, MOMENTS_S3_ACCESS_KEY_ID and \
             MOMENTS_S3_SECRET_ACCESS_KEY; missing {}",
            missing.join(", ")
        ));
        None
    }
}
