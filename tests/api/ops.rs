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

/// The document says what the service does: every error answer is a
/// problem document, lists are typed pages, and the statuses the extractors
/// answer are listed on every operation they guard.
#[tokio::test]
async fn the_document_types_every_answer_and_lists_every_error() {
    let app = spawn_app().await;
    let (_, doc) = app.get("/openapi.json", None).await;
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            operations += 1;
            let responses = op["responses"].as_object().unwrap();
            for status in ["429", "503"] {
                assert!(
                    responses.contains_key(status),
                    "{method} {path}: no {status}"
                );
            }
            if op["security"].to_string().contains("bearer") {
                assert!(responses.contains_key("401"), "{method} {path}: no 401");
            }
            if op.get("requestBody").is_some() {
                assert!(responses.contains_key("400"), "{method} {path}: no 400");
                assert!(responses.contains_key("413"), "{method} {path}: no 413");
            }
            for (status, response) in responses {
                if status.starts_with('2') {
                    if let Some(content) = response.get("content") {
                        assert!(
                            content.to_string().contains("\"schema\""),
                            "{method} {path} {status}: an answer without a schema"
                        );
                    }
                } else {
                    assert!(
                        response["content"]
                            .get("application/problem+json")
                            .is_some(),
                        "{method} {path} {status}: not a problem document"
                    );
                }
            }
        }
    }
    assert!(operations >= 40, "{operations}");
    // Where a well-formed body can name what is not there, 422 says so.
    for (path, method) in [
        ("/api/v1/posts", "post"),
        ("/api/v1/labels", "post"),
        ("/api/v1/labels/{id}", "patch"),
    ] {
        let unprocessable = &doc["paths"][path][method]["responses"]["422"];
        assert!(
            unprocessable["content"]
                .get("application/problem+json")
                .is_some(),
            "{method} {path}: no 422"
        );
    }
    let feed = &doc["paths"]["/api/v1/feed"]["get"];
    assert_eq!(
        feed["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Page_ExpandedPost"
    );
    let limit = feed["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .unwrap();
    assert_eq!(
        (
            limit["schema"]["minimum"].as_i64(),
            limit["schema"]["maximum"].as_i64()
        ),
        (Some(1), Some(100))
    );
    assert!(doc["components"]["schemas"]["Problem"].is_object());
}

#[tokio::test]
async fn a_method_a_path_does_not_answer_is_405_naming_those_it_does() {
    let app = spawn_app().await;
    let (s, headers, body) = app
        .call_with(reqwest::Method::PATCH, "/api/v1/posts/5", None, &[], None)
        .await;
    assert_eq!(s.as_u16(), 405, "{body}");
    assert_eq!(body["code"], "method_not_allowed");
    assert_eq!(headers["allow"], "GET, DELETE");
    // An unknown path is still 404.
    let (s, _, _) = app
        .call_with(reqwest::Method::PATCH, "/api/v1/nowhere", None, &[], None)
        .await;
    assert_eq!(s.as_u16(), 404);
}

#[tokio::test]
async fn a_body_must_be_an_object_not_its_fields_in_a_row() {
    let app = spawn_app().await;
    let me = app.user("rowan").await;
    let (s, body) = app
        .call(
            reqwest::Method::PATCH,
            "/api/v1/me",
            Some(&me.token),
            Some(serde_json::json!(["Someone else", null])),
        )
        .await;
    assert_eq!(
        (s.as_u16(), body["field"].as_str()),
        (400, Some("body")),
        "{body}"
    );
    let (_, me_now) = app.get("/api/v1/me", Some(&me.token)).await;
    assert_ne!(me_now["nickName"], "Someone else");
    let (s, body) = app
        .call(
            reqwest::Method::POST,
            "/api/v1/notifications/read",
            Some(&me.token),
            Some(serde_json::json!([5])),
        )
        .await;
    assert_eq!(
        (s.as_u16(), body["field"].as_str()),
        (400, Some("body")),
        "{body}"
    );
}
