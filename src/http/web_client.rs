//! The web client and admin console: the plain ES modules, CSS and images
//! under `web/`, compiled into the binary, so `moments` alone serves them
//! and nothing (no Node.js, no bundler) is needed to build or run it. The
//! pages use only the public JSON API under `/api/v1`.

use std::sync::OnceLock;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};
use sha2::{Digest, Sha256};

use crate::error::AppError;

/// One file under `web/`.
pub struct Asset {
    /// Its path under `web/`, which is also its path under `/web/`.
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

macro_rules! assets {
    ($($path:literal => $content_type:expr),* $(,)?) => {
        &[$(Asset {
            path: $path,
            content_type: $content_type,
            body: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/", $path)),
        }),*]
    };
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const SVG: &str = "image/svg+xml";

/// Every file the pages load. A unit test holds this list and the folder
/// to the same files, so a new module cannot be forgotten here.
pub static ASSETS: &[Asset] = assets![
    "index.html" => HTML,
    "app.css" => CSS,
    "icon.svg" => SVG,
    "samples/lake.svg" => SVG,
    "samples/hills.svg" => SVG,
    "samples/city.svg" => SVG,
    "js/main.js" => JS,
    "js/api.js" => JS,
    "js/dom.js" => JS,
    "js/i18n.js" => JS,
    "js/time.js" => JS,
    "js/session.js" => JS,
    "js/forms.js" => JS,
    "js/lists.js" => JS,
    "js/post_card.js" => JS,
    "js/blurhash.js" => JS,
    "js/report.js" => JS,
    "js/live.js" => JS,
    "js/types.js" => JS,
    "js/pages/auth.js" => JS,
    "js/pages/feed.js" => JS,
    "js/pages/compose.js" => JS,
    "js/pages/post.js" => JS,
    "js/pages/album.js" => JS,
    "js/pages/people.js" => JS,
    "js/pages/search.js" => JS,
    "js/pages/notifications.js" => JS,
    "js/pages/me.js" => JS,
    "js/pages/data.js" => JS,
    "js/pages/admin.js" => JS,
    "js/pages/moderation.js" => JS,
];

/// Scripts, styles and API calls come from this origin alone; nothing
/// inline, no eval. Picture URLs may name any http(s) host, and uploads
/// may be served by a CDN (`MOMENTS_MEDIA_BASE_URL`), so images alone may
/// load from elsewhere, and `Referrer-Policy: no-referrer` keeps those
/// hosts from learning the page; `blob:` is a photo being uploaded, shown
/// from the phone's own copy until its preview is stored.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' https: http: data: blob:; connect-src 'self'; \
     manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(super::resource(
        "/",
        [
            (Method::GET, web::to(index)),
            (Method::HEAD, web::to(index)),
        ],
    ));
    cfg.service(super::resource(
        "/web/{path:.+}",
        [
            (Method::GET, web::to(asset)),
            (Method::HEAD, web::to(asset)),
        ],
    ));
}

async fn index(req: HttpRequest) -> Result<HttpResponse, AppError> {
    serve(&req, "index.html")
}

async fn asset(req: HttpRequest, path: web::Path<String>) -> Result<HttpResponse, AppError> {
    serve(&req, &path)
}

/// Each asset's ETag, hashed once on first use.
fn etags() -> &'static [String] {
    static ETAGS: OnceLock<Vec<String>> = OnceLock::new();
    ETAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| {
                let digest = Sha256::digest(a.body);
                let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
                format!("\"{hex}\"")
            })
            .collect()
    })
}

fn serve(req: &HttpRequest, path: &str) -> Result<HttpResponse, AppError> {
    let Some(i) = ASSETS.iter().position(|a| a.path == path) else {
        return Err(AppError::NotFound("resource"));
    };
    let (asset, etag) = (&ASSETS[i], &etags()[i]);
    // Revalidated on every load (a 304 when unchanged), so a new binary's
    // pages are never mixed with an old one's cached modules.
    let fresh = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut res = if fresh {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    res.insert_header((header::ETAG, etag.as_str()))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header(("Cross-Origin-Opener-Policy", "same-origin"));
    if fresh {
        return Ok(res.finish());
    }
    Ok(res.content_type(asset.content_type).body(asset.body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_under(dir: &std::path::Path, prefix: &str, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("web/ is readable") {
            let entry = entry.expect("a directory entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{prefix}{name}");
            if entry.file_type().expect("a file type").is_dir() {
                files_under(&entry.path(), &format!("{path}/"), out);
            } else {
                out.push(path);
            }
        }
    }

    #[test]
    fn every_file_under_web_is_served_and_nothing_else() {
        let mut on_disk = Vec::new();
        files_under(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web"),
            "",
            &mut on_disk,
        );
        on_disk.sort();
        let mut listed: Vec<String> = ASSETS.iter().map(|a| a.path.to_string()).collect();
        listed.sort();
        assert_eq!(listed, on_disk);
    }

    #[test]
    fn the_policy_names_no_other_origin_for_scripts_styles_or_calls() {
        for directive in [
            "script-src 'self';",
            "style-src 'self';",
            "connect-src 'self';",
        ] {
            assert!(CONTENT_SECURITY_POLICY.contains(directive), "{directive}");
        }
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
    }

    #[test]
    fn every_module_imports_only_relative_paths() {
        // A bare or absolute import would load from outside `/web/` (or
        // fail without a bundler); every import stays inside the folder.
        for a in ASSETS.iter().filter(|a| a.content_type == JS) {
            let text = std::str::from_utf8(a.body).expect("UTF-8");
            for spec in import_specifiers(text) {
                assert!(
                    spec.starts_with("./") || spec.starts_with("../"),
                    "{}: import {spec:?}",
                    a.path
                );
            }
        }
    }

    /// The specifiers of the modules' `import … from '…';` lines.
    fn import_specifiers(text: &str) -> Vec<String> {
        text.lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with("import "))
            .filter_map(|l| {
                let from = l.rfind(" from ")?;
                let spec = l[from + 6..].trim().trim_end_matches(';');
                Some(spec.trim_matches(|c| c == '\'' || c == '"').to_string())
            })
            .collect()
    }
}
