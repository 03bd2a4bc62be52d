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

#[tokio::test]
async fn every_answer_carries_its_request_id_and_problems_name_it() {
    let app = crate::helpers::spawn_app().await;
    let (s, headers, body) = app
        .call_with(
            reqwest::Method::GET,
            "/api/v1/posts/1247009346221440",
            None,
            &[("x-request-id", "client-req-42")],
            None,
        )
        .await;
    assert_eq!(s.as_u16(), 404);
    assert_eq!(headers["x-request-id"], "client-req-42");
    assert_eq!(body["instance"], "client-req-42");
    // Made up when absent (or not sane), and the same in both places.
    let (s, headers, body) = app
        .call_with(
            reqwest::Method::GET,
            "/api/v1/me",
            None,
            &[("x-request-id", "no spaces allowed")],
            None,
        )
        .await;
    assert_eq!(s.as_u16(), 401);
    let id = headers["x-request-id"].to_str().unwrap().to_string();
    assert_eq!(id.len(), 16);
    assert_eq!(body["instance"], id.as_str());
    let (_, headers, _) = app
        .call_with(reqwest::Method::GET, "/healthz", None, &[], None)
        .await;
    assert!(headers.contains_key("x-request-id"));
}
