use crate::helpers::spawn_app;

#[tokio::test]
async fn health_readiness_and_the_api_description() {
    let app = spawn_app().await;
    let (s, h) = app.get("/healthz", None).await;
    assert_eq!((s.as_u16(), h["status"].as_str()), (200, Some("ok")));
    let (s, r) = app.get("/readyz", None).await;
    assert_eq!(s.as_u16(), 200, "{r}");
    assert_eq!(r["documents"], "ok");
    assert_eq!(r["live"], "ok");
    let (s, doc) = app.get("/openapi.json", None).await;
    assert_eq!(s.as_u16(), 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    for path in [
        "/api/v1/posts/{id}",
        "/api/v1/posts/{id}/comments",
        "/api/v1/admin/device-models/import",
    ] {
        assert!(
            doc["paths"].get(path).is_some(),
            "{path} missing from the OpenAPI document"
        );
    }
    let post = &doc["components"]["schemas"]["ExpandedPost"]["properties"];
    for field in [
        "likeCount",
        "commentCount",
        "likedByMe",
        "deviceModel",
        "serverTime",
    ] {
        assert!(post.get(field).is_some(), "ExpandedPost.{field} missing");
    }
}
