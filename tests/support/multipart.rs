//! A `multipart/form-data` body for `POST /api/v1/media`, written out by
//! hand so a test controls every byte (a wrong content type, a truncated
//! file, a field too long) that a client library would tidy.
#![allow(dead_code)]

/// The boundary every body here uses; `CONTENT_TYPE` names it.
pub const BOUNDARY: &str = "moments-test-boundary-7d3f";
pub const CONTENT_TYPE: &str = "multipart/form-data; boundary=moments-test-boundary-7d3f";

/// One part: a file when it has a content type, else a text field.
pub struct Part<'a> {
    pub name: &'a str,
    pub content_type: Option<&'a str>,
    pub bytes: Vec<u8>,
}

/// The `file` part, sent as `IMG_0001.jpg` whatever it holds.
pub fn file(bytes: Vec<u8>, content_type: &str) -> Part<'_> {
    Part {
        name: "file",
        content_type: Some(content_type),
        bytes,
    }
}

pub fn field<'a>(name: &'a str, text: &str) -> Part<'a> {
    Part {
        name,
        content_type: None,
        bytes: text.as_bytes().to_vec(),
    }
}

pub fn form(parts: &[Part<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for p in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        match p.content_type {
            Some(ct) => body.extend_from_slice(
                format!(
                    "Content-Disposition: form-data; name=\"{}\"; filename=\"IMG_0001.jpg\"\r\nContent-Type: {ct}\r\n\r\n",
                    p.name
                )
                .as_bytes(),
            ),
            None => body.extend_from_slice(
                format!("Content-Disposition: form-data; name=\"{}\"\r\n\r\n", p.name).as_bytes(),
            ),
        }
        body.extend_from_slice(&p.bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// A body of one JPEG file.
pub fn jpeg(bytes: Vec<u8>) -> Vec<u8> {
    form(&[file(bytes, "image/jpeg")])
}
