//! A photo as uploaded, turned into what is stored: an original capped on
//! its long side and a preview for the nine-picture grid, each re-encoded
//! upright with no metadata, and a blurhash to paint before either loads.
//! Pure CPU and no I/O: it runs on the picture pool (`thread_pool`), never
//! on an async worker.
//!
//! Why each step is as it is:
//! - The format is read from the bytes, never from the file's name or the
//!   part's content type; a content type that names another image format
//!   is refused, so a client learns its mistake instead of storing a
//!   mislabelled file.
//! - The dimensions are read from the header and checked against the pixel
//!   and side limits before anything is allocated for the pixels: a tiny
//!   file that claims 100,000 × 100,000 costs a header read.
//! - Every rendition is encoded again from the pixels, the original too:
//!   an encoder writes no EXIF, XMP or IPTC, so a phone's GPS position,
//!   its serial numbers and the rest never reach storage. The orientation
//!   the EXIF gave is applied to the pixels first, so nothing is lost with
//!   it. The ICC colour profile is kept (it says how to show the colours,
//!   as an iPhone's Display P3 pictures need) when it is a well-formed
//!   profile of at most 64 KiB, as a camera's are; a larger or malformed
//!   one is dropped and the colours are shown as sRGB. Kept whole, a 15 MB
//!   "profile" would ride along in every preview.
//! - Memory: the decoder may allocate at most 4 bytes per allowed pixel
//!   (`max_alloc`: 200 MB at 50 MP), which bounds a PNG's compressed
//!   colour profile too; a 16-bit picture thus has fewer pixels allowed.
//!   The pixels are made 8-bit before they are turned upright, so one
//!   picture peaks at about twice `max_alloc`, and the picture pool runs
//!   one per core.
//! - Opaque pictures become JPEG, pictures with transparency PNG: the two
//!   formats every client shows. An animated GIF keeps its first frame.

use std::io::Cursor;

use fast_image_resize::{images::Image as ResizedImage, IntoImageView, ResizeOptions, Resizer};
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::{DynamicImage, ImageDecoder, ImageEncoder, ImageFormat, ImageReader};

/// What processing may take and make.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// The most pixels a picture may have (width × height).
    pub max_pixels: u64,
    /// The longest side a stored original keeps; larger ones are scaled
    /// down to it.
    pub original_side: u32,
    /// The preview's shorter side (it is scaled to cover a square of this
    /// size in the grid); never larger than the original.
    pub preview_side: u32,
}

/// The formats taken, as the API names them.
pub const ACCEPTED: &str = "JPEG, PNG, WebP or GIF";

/// The longest side any picture may have, whatever its pixel count: a
/// 1 × 50,000,000 strip is within the pixel bound but no photo.
pub const MAX_SIDE: u32 = 20_000;

pub use crate::domain::media::Encoding;

/// One stored picture.
#[derive(Debug, Clone)]
pub struct Rendition {
    pub bytes: Vec<u8>,
    pub width: u32,
    pub height: u32,
    pub encoding: Encoding,
}

/// What an upload becomes.
#[derive(Debug, Clone)]
pub struct Processed {
    pub original: Rendition,
    pub preview: Rendition,
    pub blurhash: String,
}

/// Why a file was refused; each says what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not one of the formats taken, or no image at all.
    NotAnImage,
    /// The content type names one image format and the bytes are another.
    Mislabelled {
        declared: String,
        found: &'static str,
    },
    /// More pixels, or a longer side, than allowed.
    TooLarge { width: u32, height: u32 },
    /// Cut short or damaged.
    Damaged(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotAnImage => write!(f, "the file is not a {ACCEPTED} image"),
            Refusal::Mislabelled { declared, found } => write!(
                f,
                "the file is sent as {declared} but its bytes are a {found} image"
            ),
            Refusal::TooLarge { width, height } => write!(
                f,
                "the picture is {width} × {height} pixels, more than this service takes"
            ),
            Refusal::Damaged(why) => write!(f, "the picture could not be read: {why}"),
        }
    }
}

fn format_name(format: ImageFormat) -> Option<&'static str> {
    match format {
        ImageFormat::Jpeg => Some("JPEG"),
        ImageFormat::Png => Some("PNG"),
        ImageFormat::WebP => Some("WebP"),
        ImageFormat::Gif => Some("GIF"),
        _ => None,
    }
}

/// The format a content type names, if it names an image format at all.
fn declared_format(content_type: &str) -> Option<ImageFormat> {
    let essence = content_type.split(';').next()?.trim().to_ascii_lowercase();
    match essence.as_str() {
        "image/jpeg" | "image/jpg" | "image/pjpeg" => Some(ImageFormat::Jpeg),
        "image/png" => Some(ImageFormat::Png),
        "image/webp" => Some(ImageFormat::WebP),
        "image/gif" => Some(ImageFormat::Gif),
        _ => None,
    }
}

/// Decodes `bytes` within `bounds` and makes the stored renditions.
/// `content_type` is what the client said the file is (checked against
/// the bytes when it names an image format; anything else, such as
/// `application/octet-stream`, says nothing).
pub fn process(bytes: &[u8], content_type: &str, bounds: &Bounds) -> Result<Processed, Refusal> {
    let found = image::guess_format(bytes).map_err(|_| Refusal::NotAnImage)?;
    let found_name = format_name(found).ok_or(Refusal::NotAnImage)?;
    if let Some(declared) = declared_format(content_type) {
        if declared != found {
            return Err(Refusal::Mislabelled {
                declared: content_type.trim().to_string(),
                found: found_name,
            });
        }
    }
    let mut reader = ImageReader::new(Cursor::new(bytes));
    reader.set_format(found);
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(bounds.max_pixels.saturating_mul(4));
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(refusal)?;
    let (width, height) = decoder.dimensions();
    if width == 0
        || height == 0
        || u64::from(width) * u64::from(height) > bounds.max_pixels
        || width.max(height) > MAX_SIDE
    {
        return Err(Refusal::TooLarge { width, height });
    }
    let orientation = decoder.orientation().map_err(refusal)?;
    let icc = decoder
        .icc_profile()
        .map_err(refusal)?
        .filter(|p| usable_profile(p));
    let decoded = DynamicImage::from_decoder(decoder).map_err(refusal)?;
    let mut picture = if decoded.color().has_alpha() {
        DynamicImage::ImageRgba8(decoded.into_rgba8())
    } else {
        DynamicImage::ImageRgb8(decoded.into_rgb8())
    };
    picture.apply_orientation(orientation);
    let encoding = if picture.color().has_alpha() {
        Encoding::Png
    } else {
        Encoding::Jpeg
    };
    let (w, h) = (picture.width(), picture.height());
    let original_size = fit_long_side(w, h, bounds.original_side);
    let original = scaled(&picture, original_size)?;
    let preview_size = cover_short_side(w, h, bounds.preview_side, original_size);
    let preview = scaled(&original, preview_size)?;
    let blurhash = blurhash_of(&preview)?;
    Ok(Processed {
        original: encode(&original, encoding, icc.as_deref(), 85)?,
        preview: encode(&preview, encoding, icc.as_deref(), 80)?,
        blurhash,
    })
}

/// The largest colour profile kept: a camera's or phone's is a few KB.
pub const MAX_PROFILE_BYTES: usize = 64 * 1024;

/// Whether `profile` looks like an ICC profile (its header says its own
/// length and carries the `acsp` signature) and is small enough to keep.
fn usable_profile(profile: &[u8]) -> bool {
    const HEADER: usize = 128;
    if profile.len() < HEADER || profile.len() > MAX_PROFILE_BYTES {
        return false;
    }
    let declared = u32::from_be_bytes([profile[0], profile[1], profile[2], profile[3]]);
    declared as usize == profile.len() && &profile[36..40] == b"acsp"
}

fn refusal(e: image::ImageError) -> Refusal {
    match e {
        image::ImageError::Limits(_) => Refusal::TooLarge {
            width: 0,
            height: 0,
        },
        image::ImageError::Unsupported(_) => Refusal::NotAnImage,
        other => Refusal::Damaged(other.to_string()),
    }
}

/// `(w, h)` scaled down so the long side is at most `side`.
fn fit_long_side(w: u32, h: u32, side: u32) -> (u32, u32) {
    let long = w.max(h);
    if long <= side {
        return (w, h);
    }
    let scale = f64::from(side) / f64::from(long);
    (
        ((f64::from(w) * scale).round() as u32).max(1),
        ((f64::from(h) * scale).round() as u32).max(1),
    )
}

/// The preview's size: the short side `side` (so a square crop of it fills
/// a grid cell), the long side at most three times that (a panorama's
/// preview stays small), never larger than the original it comes from.
fn cover_short_side(w: u32, h: u32, side: u32, original: (u32, u32)) -> (u32, u32) {
    let short = w.min(h);
    let scale = (f64::from(side) / f64::from(short)).min(1.0);
    let (pw, ph) = (
        ((f64::from(w) * scale).round() as u32).max(1),
        ((f64::from(h) * scale).round() as u32).max(1),
    );
    let capped = fit_long_side(pw, ph, side.saturating_mul(3));
    (capped.0.min(original.0), capped.1.min(original.1))
}

fn scaled(picture: &DynamicImage, (w, h): (u32, u32)) -> Result<DynamicImage, Refusal> {
    if (w, h) == (picture.width(), picture.height()) {
        return Ok(picture.clone());
    }
    let pixel_type = picture
        .pixel_type()
        .ok_or_else(|| Refusal::Damaged("unexpected pixel layout".into()))?;
    let mut out = ResizedImage::new(w, h, pixel_type);
    Resizer::new()
        .resize(picture, &mut out, &ResizeOptions::new())
        .map_err(|e| Refusal::Damaged(e.to_string()))?;
    let buffer = out.into_vec();
    let made = if picture.color().has_alpha() {
        image::RgbaImage::from_raw(w, h, buffer).map(DynamicImage::ImageRgba8)
    } else {
        image::RgbImage::from_raw(w, h, buffer).map(DynamicImage::ImageRgb8)
    };
    made.ok_or_else(|| Refusal::Damaged("resize gave an unexpected size".into()))
}

/// A blurhash of 4 × 3 components, from a copy at most 64 pixels wide:
/// a placeholder needs no more, and it costs microseconds.
fn blurhash_of(preview: &DynamicImage) -> Result<String, Refusal> {
    let small = fit_long_side(preview.width(), preview.height(), 64);
    let rgba = scaled(preview, small)?.into_rgba8();
    let (x, y) = if small.0 >= small.1 { (4, 3) } else { (3, 4) };
    blurhash::encode(x, y, rgba.width(), rgba.height(), rgba.as_raw())
        .map_err(|e| Refusal::Damaged(e.to_string()))
}

fn encode(
    picture: &DynamicImage,
    encoding: Encoding,
    icc: Option<&[u8]>,
    quality: u8,
) -> Result<Rendition, Refusal> {
    let mut bytes = Vec::new();
    let (w, h) = (picture.width(), picture.height());
    let written = match encoding {
        Encoding::Jpeg => {
            let mut encoder = JpegEncoder::new_with_quality(&mut bytes, quality);
            if let Some(icc) = icc {
                // A profile the encoder cannot carry leaves the colours as
                // sRGB, which is what most pictures are anyway.
                let _ = encoder.set_icc_profile(icc.to_vec());
            }
            encoder.write_image(picture.as_bytes(), w, h, picture.color().into())
        }
        Encoding::Png => {
            let mut encoder = PngEncoder::new_with_quality(
                &mut bytes,
                CompressionType::Fast,
                FilterType::Adaptive,
            );
            if let Some(icc) = icc {
                let _ = encoder.set_icc_profile(icc.to_vec());
            }
            encoder.write_image(picture.as_bytes(), w, h, picture.color().into())
        }
    };
    written.map_err(|e| Refusal::Damaged(e.to_string()))?;
    Ok(Rendition {
        bytes,
        width: w,
        height: h,
        encoding,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::service::media::samples::{has_app1, phone_jpeg};

    const BOUNDS: Bounds = Bounds {
        max_pixels: 50_000_000,
        original_side: 256,
        preview_side: 40,
    };

    #[test]
    fn a_phone_photo_is_turned_upright_and_keeps_no_metadata() {
        // Orientation 6: the camera held the phone turned; the pixels must
        // be turned 90° clockwise to be shown upright.
        let upload = phone_jpeg(300, 200, 6).unwrap();
        assert!(has_app1(&upload), "the fixture carries EXIF");
        let made = process(&upload, "image/jpeg", &BOUNDS).unwrap();
        assert_eq!(made.original.encoding, Encoding::Jpeg);
        // Upright, then capped at 256 on the long side.
        assert_eq!((made.original.width, made.original.height), (171, 256));
        assert!(!has_app1(&made.original.bytes), "no EXIF in the original");
        assert!(!has_app1(&made.preview.bytes), "nor in the preview");
        let gps = b"N\0\0\0";
        assert!(!made.original.bytes.windows(4).any(|w| w == gps));
        // The red half is on top once turned.
        let back = image::load_from_memory(&made.original.bytes)
            .unwrap()
            .into_rgb8();
        let top = back.get_pixel(85, 10);
        let bottom = back.get_pixel(85, 245);
        assert!(top[0] > 150 && top[2] < 100, "top is red: {top:?}");
        assert!(
            bottom[2] > 150 && bottom[0] < 100,
            "bottom is blue: {bottom:?}"
        );
        // The preview covers a 40 px square, and the blurhash is 4 × 3
        // or 3 × 4 components (6 + 2 × 11 characters).
        assert_eq!((made.preview.width, made.preview.height), (40, 60));
        assert_eq!(made.blurhash.len(), 28);
    }

    #[test]
    fn transparency_is_kept_as_png() {
        let picture = image::RgbaImage::from_pixel(30, 20, image::Rgba([0, 0, 0, 0]));
        let mut png = Vec::new();
        PngEncoder::new(&mut png)
            .write_image(picture.as_raw(), 30, 20, image::ExtendedColorType::Rgba8)
            .unwrap();
        let made = process(&png, "application/octet-stream", &BOUNDS).unwrap();
        assert_eq!(made.original.encoding, Encoding::Png);
        assert_eq!((made.original.width, made.original.height), (30, 20));
    }

    #[test]
    fn what_is_not_a_picture_is_refused_saying_why() {
        assert_eq!(
            process(b"hello, world", "image/png", &BOUNDS).unwrap_err(),
            Refusal::NotAnImage
        );
        let jpeg = phone_jpeg(40, 30, 1).unwrap();
        assert!(matches!(
            process(&jpeg, "image/png", &BOUNDS).unwrap_err(),
            Refusal::Mislabelled { found: "JPEG", .. }
        ));
        let cut = &jpeg[..jpeg.len() / 2];
        assert!(matches!(
            process(cut, "image/jpeg", &BOUNDS).unwrap_err(),
            Refusal::Damaged(_)
        ));
    }

    #[test]
    fn a_bomb_is_refused_from_its_header() {
        // A PNG whose header claims 100,000 × 100,000 pixels, and nothing
        // after it: refused before any pixel is allocated.
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = b"IHDR".to_vec();
        ihdr.extend_from_slice(&100_000u32.to_be_bytes());
        ihdr.extend_from_slice(&100_000u32.to_be_bytes());
        ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
        png.extend_from_slice(&13u32.to_be_bytes());
        png.extend_from_slice(&ihdr);
        png.extend_from_slice(&crc32(&ihdr).to_be_bytes());
        let refused = process(&png, "image/png", &BOUNDS).unwrap_err();
        assert!(matches!(refused, Refusal::TooLarge { .. }), "{refused:?}");
        // Within the side limit but over the pixel bound: refused too.
        let small = Bounds {
            max_pixels: 1_000,
            ..BOUNDS
        };
        let refused = process(&phone_jpeg(40, 30, 1).unwrap(), "image/jpeg", &small).unwrap_err();
        assert_eq!(
            refused,
            Refusal::TooLarge {
                width: 40,
                height: 30
            }
        );
    }

    /// A JPEG carrying `profile` as its ICC profile.
    fn jpeg_with_profile(profile: Vec<u8>) -> Vec<u8> {
        let picture = image::RgbImage::from_pixel(40, 30, image::Rgb([200, 30, 30]));
        let mut jpeg = Vec::new();
        let mut encoder = JpegEncoder::new_with_quality(&mut jpeg, 90);
        encoder.set_icc_profile(profile).unwrap();
        encoder
            .write_image(picture.as_raw(), 40, 30, image::ExtendedColorType::Rgb8)
            .unwrap();
        jpeg
    }

    fn profile_of(jpeg: &[u8]) -> Option<Vec<u8>> {
        let mut decoder = ImageReader::new(Cursor::new(jpeg))
            .with_guessed_format()
            .unwrap()
            .into_decoder()
            .unwrap();
        decoder.icc_profile().unwrap()
    }

    /// A profile of `len` bytes whose header is well formed.
    fn profile(len: usize) -> Vec<u8> {
        let mut p = vec![7u8; len];
        p[..4].copy_from_slice(&(len as u32).to_be_bytes());
        p[36..40].copy_from_slice(b"acsp");
        p
    }

    #[test]
    fn a_camera_colour_profile_is_kept_and_a_huge_or_bogus_one_dropped() {
        let kept = process(&jpeg_with_profile(profile(560)), "image/jpeg", &BOUNDS).unwrap();
        assert_eq!(profile_of(&kept.original.bytes), Some(profile(560)));
        assert_eq!(profile_of(&kept.preview.bytes), Some(profile(560)));
        // 200 KB riding in a JPEG's APP2 segments: not in any rendition.
        let huge = process(&jpeg_with_profile(profile(200_000)), "image/jpeg", &BOUNDS).unwrap();
        assert_eq!(profile_of(&huge.original.bytes), None);
        assert!(
            huge.preview.bytes.len() < 10_000,
            "{}",
            huge.preview.bytes.len()
        );
        // Bytes that are no profile, whatever their size.
        let bogus = process(&jpeg_with_profile(vec![1u8; 600]), "image/jpeg", &BOUNDS).unwrap();
        assert_eq!(profile_of(&bogus.original.bytes), None);
    }

    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xFFFF_FFFFu32;
        for b in bytes {
            crc ^= u32::from(*b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
}
