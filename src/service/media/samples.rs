//! Pictures as phones make them, for the tests, the benchmarks and the
//! browser suite's fixture: a JPEG whose EXIF holds an orientation and a
//! GPS position, and a check for any APP1 (EXIF or XMP) segment left in
//! one. Built here rather than kept as files so that each size and
//! orientation is one call.

use image::codecs::jpeg::JpegEncoder;
use image::ImageEncoder;

/// A JPEG of `w` × `h` with an EXIF block holding `orientation` and a
/// GPS position (31.23 N, 121.47 E), as a phone writes one. Left half
/// red, right half blue, so a rotation shows.
pub fn phone_jpeg(w: u32, h: u32, orientation: u16) -> Result<Vec<u8>, image::ImageError> {
    let picture = image::RgbImage::from_fn(w, h, |x, _| {
        if x < w / 2 {
            image::Rgb([220, 20, 20])
        } else {
            image::Rgb([20, 20, 220])
        }
    });
    let mut plain = Vec::new();
    JpegEncoder::new_with_quality(&mut plain, 90).write_image(
        picture.as_raw(),
        w,
        h,
        image::ExtendedColorType::Rgb8,
    )?;
    Ok(with_exif(&plain, &exif_block(orientation)))
}

/// A photo-like JPEG of `w` × `h` (smooth light and colour with grain, so
/// that it encodes to about as many bytes as a phone photo of that size
/// and decodes at the same cost), with the same EXIF as `phone_jpeg`.
pub fn textured_phone_jpeg(w: u32, h: u32, orientation: u16) -> Result<Vec<u8>, image::ImageError> {
    let mut seed: u32 = 0x9E37_79B9;
    let picture = image::RgbImage::from_fn(w, h, |x, y| {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let grain = (seed % 48) as i32 - 24;
        let fx = x as f32 / w as f32;
        let fy = y as f32 / h as f32;
        let wave = ((fx * 23.0).sin() * (fy * 17.0).cos() * 60.0) as i32;
        let channel = |base: f32| (base * 255.0) as i32 + wave + grain;
        image::Rgb([
            channel(0.3 + 0.5 * fx).clamp(0, 255) as u8,
            channel(0.4 + 0.3 * fy).clamp(0, 255) as u8,
            channel(0.7 - 0.4 * fx * fy).clamp(0, 255) as u8,
        ])
    });
    let mut plain = Vec::new();
    JpegEncoder::new_with_quality(&mut plain, 92).write_image(
        picture.as_raw(),
        w,
        h,
        image::ExtendedColorType::Rgb8,
    )?;
    Ok(with_exif(&plain, &exif_block(orientation)))
}

/// Splices an APP1 EXIF segment in after the JPEG's SOI marker.
fn with_exif(jpeg: &[u8], tiff: &[u8]) -> Vec<u8> {
    let mut segment = b"Exif\0\0".to_vec();
    segment.extend_from_slice(tiff);
    // The block is a few hundred bytes: far below a segment's 64 KiB.
    let len = u16::try_from(segment.len() + 2).unwrap_or(u16::MAX);
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&segment);
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// A little-endian TIFF block: IFD0 with Orientation and a pointer to
/// a GPS IFD with latitude and longitude.
fn exif_block(orientation: u16) -> Vec<u8> {
    let mut t = b"II*\0".to_vec();
    t.extend_from_slice(&8u32.to_le_bytes());
    // IFD0 at 8: two entries.
    let ifd0_entries = 2u16;
    let gps_ifd_at = 8 + 2 + 12 * u32::from(ifd0_entries) + 4;
    t.extend_from_slice(&ifd0_entries.to_le_bytes());
    // Orientation (0x0112), SHORT, 1.
    t.extend_from_slice(&0x0112u16.to_le_bytes());
    t.extend_from_slice(&3u16.to_le_bytes());
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(&u32::from(orientation).to_le_bytes());
    // GPSInfo (0x8825), LONG, 1, offset of the GPS IFD.
    t.extend_from_slice(&0x8825u16.to_le_bytes());
    t.extend_from_slice(&4u16.to_le_bytes());
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(&gps_ifd_at.to_le_bytes());
    t.extend_from_slice(&0u32.to_le_bytes());
    // GPS IFD: 4 entries, their rationals after it.
    let entries = 4u16;
    let values_at = gps_ifd_at + 2 + 12 * u32::from(entries) + 4;
    t.extend_from_slice(&entries.to_le_bytes());
    let mut entry = |tag: u16, kind: u16, count: u32, value: u32| {
        t.extend_from_slice(&tag.to_le_bytes());
        t.extend_from_slice(&kind.to_le_bytes());
        t.extend_from_slice(&count.to_le_bytes());
        t.extend_from_slice(&value.to_le_bytes());
    };
    entry(1, 2, 2, u32::from_le_bytes(*b"N\0\0\0"));
    entry(2, 5, 3, values_at);
    entry(3, 2, 2, u32::from_le_bytes(*b"E\0\0\0"));
    entry(4, 5, 3, values_at + 24);
    t.extend_from_slice(&0u32.to_le_bytes());
    for (d, m, s) in [(31u32, 13u32, 48u32), (121, 28, 12)] {
        for n in [d, m, s] {
            t.extend_from_slice(&n.to_le_bytes());
            t.extend_from_slice(&1u32.to_le_bytes());
        }
    }
    t
}

/// Whether a JPEG carries an APP1 segment (EXIF or XMP).
pub fn has_app1(jpeg: &[u8]) -> bool {
    let mut i = 2;
    while i + 4 <= jpeg.len() && jpeg[i] == 0xFF {
        let marker = jpeg[i + 1];
        if marker == 0xDA {
            return false;
        }
        if marker == 0xE1 {
            return true;
        }
        let len = usize::from(u16::from_be_bytes([jpeg[i + 2], jpeg[i + 3]]));
        i += 2 + len;
    }
    false
}
