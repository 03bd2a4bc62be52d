use reqwest::Method;
use serde_json::json;

use crate::helpers::{assert_problem, on_real_stores, spawn_app, spawn_app_with};

#[tokio::test]
async fn admins_map_models_and_posts_show_the_name_in_the_readers_language() {
    let app = spawn_app().await;
    let admin = app.admin().await;
    let u = app.user("phone").await;
    let (_, post) = app
        .post(
            "/api/v1/posts",
            Some(&u.token),
            json!({"category": "TEXT", "content": "hi", "device": "ONEPLUS  A6000"}),
        )
        .await;
    let id = post["id"].as_i64().unwrap();
    assert_eq!(post["device"], "ONEPLUS  A6000");

    let (s, row) = app
        .call(
            Method::PUT,
            "/api/v1/admin/device-models/oneplus%20a6000",
            Some(&admin.token),
            Some(json!({"displayName": {"zh": "一加 6", "en": "OnePlus 6"}, "brand": "OnePlus"})),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{row}");
    assert_eq!(row["model"], "oneplus a6000");
    let (_, zh) = app.get(&format!("/api/v1/posts/{id}"), None).await;
    assert_eq!(zh["device"], "一加 6");
    assert_eq!(zh["deviceModel"], "ONEPLUS  A6000");
    let (_, en) = app.get(&format!("/api/v1/posts/{id}?lang=en"), None).await;
    assert_eq!(en["device"], "OnePlus 6");

    assert_eq!(
        app.delete(
            "/api/v1/admin/device-models/ONEPLUS%20A6000",
            Some(&admin.token)
        )
        .await
        .0
        .as_u16(),
        204
    );
    let (_, raw) = app.get(&format!("/api/v1/posts/{id}"), None).await;
    assert_eq!(raw["device"], "ONEPLUS  A6000");
    assert_problem(
        &app.delete(
            "/api/v1/admin/device-models/ONEPLUS%20A6000",
            Some(&admin.token),
        )
        .await,
        404,
        "not_found",
    );
    let bad = app
        .call(
            Method::PUT,
            "/api/v1/admin/device-models/x",
            Some(&admin.token),
            Some(json!({"displayName": {"zh": ""}})),
        )
        .await;
    assert_problem(&bad, 400, "invalid_input");
}

#[tokio::test]
async fn imports_take_json_or_csv_and_refuse_bad_rows_whole() {
    let app = spawn_app().await;
    let admin = app.admin().await;
    let (s, r) = app
        .call(
            Method::POST,
            "/api/v1/admin/device-models/import",
            Some(&admin.token),
            Some(json!([
                {"model": "M2004J19C", "displayName": {"zh": "红米 9", "en": "Redmi 9"}, "brand": "Xiaomi"},
                {"model": "SM-G9910", "displayName": {"zh": "三星 S21", "en": "Galaxy S21"}}
            ])),
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{r}");
    assert_eq!(r["imported"], 2);

    let csv = "model,zh,en,brand\nONEPLUS A6000,一加 6,OnePlus 6,OnePlus\nm2004j19c,红米9,Redmi 9,Xiaomi\n";
    let resp = app
        .client
        .post(format!("{}/api/v1/admin/device-models/import", app.base))
        .bearer_auth(&admin.token)
        .header("content-type", "text/csv")
        .body(csv)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let (_, list) = app
        .get("/api/v1/admin/device-models", Some(&admin.token))
        .await;
    let models: Vec<(&str, &str)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["model"].as_str().unwrap(),
                m["displayName"]["zh"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        models,
        vec![
            ("m2004j19c", "红米9"),
            ("oneplus a6000", "一加 6"),
            ("sm-g9910", "三星 S21")
        ]
    );

    let bad = app
        .call(
            Method::POST,
            "/api/v1/admin/device-models/import",
            Some(&admin.token),
            Some(json!([{"model": "NEW1", "displayName": {"zh": "新", "en": "New"}}, {"model": "", "displayName": {"zh": "x", "en": "x"}}])),
        )
        .await;
    assert_eq!(
        assert_problem(&bad, 400, "invalid_input")["field"],
        "[1].model"
    );
    let (_, after) = app
        .get("/api/v1/admin/device-models", Some(&admin.token))
        .await;
    assert_eq!(
        after["items"].as_array().unwrap().len(),
        3,
        "a refused import writes nothing"
    );
}

#[tokio::test]
async fn a_second_embedded_process_on_the_same_data_dir_is_refused() {
    if on_real_stores() {
        // Instances share MongoDB and Redis; the next test covers them.
        return;
    }
    let first = spawn_app().await;
    let err = moments::startup::connect_stores(&first.settings)
        .await
        .err()
        .expect("a second opener must be refused");
    assert!(
        err.to_string()
            .contains("in use by another moments process"),
        "{err:#}"
    );
}

#[tokio::test]
async fn every_instance_sees_a_device_change_within_a_second() {
    if !on_real_stores() {
        // One process per data directory: there is no second instance to tell.
        return;
    }
    let first = spawn_app().await;
    let second = spawn_app_with(first.settings.clone()).await;
    let admin = first.admin().await;
    let u = first.user("dual").await;
    let (_, post) = first
        .post(
            "/api/v1/posts",
            Some(&u.token),
            json!({"category": "TEXT", "content": "x", "device": "PIXEL 8"}),
        )
        .await;
    let id = post["id"].as_i64().unwrap();
    assert_eq!(
        second.get(&format!("/api/v1/posts/{id}"), None).await.1["device"],
        "PIXEL 8"
    );
    first
        .call(
            Method::PUT,
            "/api/v1/admin/device-models/pixel%208",
            Some(&admin.token),
            Some(json!({"displayName": {"zh": "谷歌 Pixel 8", "en": "Google Pixel 8"}})),
        )
        .await;
    // The other instance polls every 100 ms here (500 ms by default); give it
    // up to a second, as promised, checking often.
    let mut shown = String::new();
    for _ in 0..20 {
        shown = second.get(&format!("/api/v1/posts/{id}"), None).await.1["device"]
            .as_str()
            .unwrap()
            .to_string();
        if shown == "谷歌 Pixel 8" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(shown, "谷歌 Pixel 8");
}

/// A whole table is larger than the body limit of every other request; an
/// admin may send one, anybody else is refused before it is read.
#[tokio::test]
async fn a_table_larger_than_other_bodies_imports_for_an_admin_only() {
    let app = spawn_app().await;
    let admin = app.admin().await;
    let mut csv = String::from("model,zh,en\n");
    for i in 0..3000 {
        csv.push_str(&format!(
            "PHONE-MODEL-{i:05},手机型号 {i},Phone model number {i}\n"
        ));
    }
    assert!(csv.len() > 64 * 1024, "{}", csv.len());
    let send = |token: String, body: String| {
        app.client
            .post(format!("{}/api/v1/admin/device-models/import", app.base))
            .bearer_auth(token)
            .header("content-type", "text/csv")
            .body(body)
            .send()
    };
    let user = app.user("notadmin").await;
    let refused = send(user.token.clone(), csv.clone()).await.unwrap();
    assert_eq!(refused.status().as_u16(), 403);
    let resp = send(admin.token.clone(), csv).await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["imported"], 3000);
}

#[tokio::test]
async fn an_import_preview_shows_what_would_change_and_writes_nothing() {
    let app = spawn_app().await;
    let admin = app.admin().await;
    let (s, _) = app
        .call(
            Method::PUT,
            "/api/v1/admin/device-models/ONEPLUS%20A6000",
            Some(&admin.token),
            Some(json!({"displayName": {"zh": "一加 6", "en": "OnePlus 6"}, "brand": "OnePlus"})),
        )
        .await;
    assert_eq!(s.as_u16(), 200);
    app.call(
        Method::PUT,
        "/api/v1/admin/device-models/SM-G9910",
        Some(&admin.token),
        Some(json!({"displayName": {"zh": "三星 S21", "en": "Galaxy S21"}})),
    )
    .await;
    // One row the same, one renamed, one new written twice (the last wins).
    let csv = "model,zh,en,brand\noneplus a6000,一加 6,OnePlus 6,OnePlus\nSM-G9910,三星 Galaxy S21,Galaxy S21,Samsung\nM2004J19C,红米,Redmi,Xiaomi\nm2004j19c,红米 9,Redmi 9,Xiaomi\n";
    let resp = app
        .client
        .post(format!(
            "{}/api/v1/admin/device-models/import/preview",
            app.base
        ))
        .bearer_auth(&admin.token)
        .header("content-type", "text/csv")
        .body(csv)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let preview: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(preview["unchanged"], 1, "{preview}");
    assert_eq!(
        preview["added"],
        json!([{"model": "m2004j19c", "after": {"displayName": {"zh": "红米 9", "en": "Redmi 9"}, "brand": "Xiaomi"}}])
    );
    assert_eq!(
        preview["changed"],
        json!([{"model": "sm-g9910",
                "before": {"displayName": {"zh": "三星 S21", "en": "Galaxy S21"}, "brand": ""},
                "after": {"displayName": {"zh": "三星 Galaxy S21", "en": "Galaxy S21"}, "brand": "Samsung"}}])
    );
    let (_, list) = app
        .get("/api/v1/admin/device-models", Some(&admin.token))
        .await;
    assert_eq!(list["items"].as_array().unwrap().len(), 2, "{list}");

    let bad = app
        .call(
            Method::POST,
            "/api/v1/admin/device-models/import/preview",
            Some(&admin.token),
            Some(json!([{"model": "X1", "displayName": {"zh": "", "en": "x"}}])),
        )
        .await;
    assert_eq!(
        assert_problem(&bad, 400, "invalid_input")["field"],
        "[0].displayName.zh"
    );
    let user = app.user("curious").await;
    let not_admin = app
        .call(
            Method::POST,
            "/api/v1/admin/device-models/import/preview",
            Some(&user.token),
            Some(json!([{"model": "X1", "displayName": {"zh": "x", "en": "x"}}])),
        )
        .await;
    assert_problem(&not_admin, 403, "forbidden");
}
