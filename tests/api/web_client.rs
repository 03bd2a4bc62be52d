//! The web client's files, as the binary serves them.

use reqwest::Method;

use crate::helpers::spawn_app;

#[tokio::test]
async fn the_page_and_its_modules_are_served_with_a_strict_policy() {
    let app = spawn_app().await;
    let page = app
        .client
        .get(format!("{}/", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let headers = page.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self';"), "{csp}");
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<script type="module" src="/web/js/main.js">"#));

    let module = app
        .client
        .get(format!("{}/web/js/main.js", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(module.status().as_u16(), 200);
    assert_eq!(
        module.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let etag = module.headers()["etag"].clone();
    assert_eq!(module.headers()["cache-control"], "no-cache");

    // Revalidation: the same file answers 304 with no body.
    let again = app
        .client
        .get(format!("{}/web/js/main.js", app.base))
        .header("if-none-match", etag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status().as_u16(), 304);
    assert_eq!(again.headers()["etag"], etag);
    assert!(again.bytes().await.unwrap().is_empty());
}

#[tokio::test]
async fn unknown_files_and_methods_answer_problems() {
    let app = spawn_app().await;
    for path in [
        "/web/js/nope.js",
        "/web/../Cargo.toml",
        "/web/%2e%2e/Cargo.toml",
        "/web/js/../../src/main.rs",
    ] {
        let (status, body) = app.get(path, None).await;
        assert_eq!(status.as_u16(), 404, "{path}: {body}");
        assert_eq!(body["code"], "not_found", "{path}");
    }
    let (status, _) = app.call(Method::POST, "/", None, None).await;
    assert_eq!(status.as_u16(), 405);
}
