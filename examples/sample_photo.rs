//! Writes a phone-like JPEG (its EXIF holds an orientation and a GPS
//! position) for the browser suite to upload, or with `textured` one that
//! encodes like a real photo, for trying uploads by hand:
//! `cargo run --example sample_photo -- OUT.jpg [WIDTH HEIGHT ORIENTATION [textured]]`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .ok_or("usage: sample_photo OUT.jpg [WIDTH HEIGHT ORIENTATION [textured]]")?;
    let mut number = |default: u32| -> Result<u32, Box<dyn std::error::Error>> {
        Ok(args
            .next()
            .map(|a| a.parse())
            .transpose()?
            .unwrap_or(default))
    };
    let (w, h, orientation) = (number(640)?, number(480)?, number(6)?);
    let orientation = u16::try_from(orientation)?;
    let textured = std::env::args().nth(5).is_some_and(|a| a == "textured");
    let jpeg = if textured {
        moments::service::media::samples::textured_phone_jpeg(w, h, orientation)?
    } else {
        moments::service::media::samples::phone_jpeg(w, h, orientation)?
    };
    std::fs::write(&out, jpeg)?;
    Ok(())
}
