//! What a post may contain (text, up to 9 pictures, category, device, geo,
//! audience), checked before it is stored.

use serde::{Deserialize, Serialize};

use super::{id_array_schema, parse_http_url, parse_text, text_schema, url_schema};
use crate::error::AppError;

pub const MAX_CONTENT_CHARS: usize = 5000;
pub const MAX_PICTURES: usize = 9;
/// People a post may name for their attention (提醒谁看).
pub const MAX_MENTIONS: usize = 10;
/// Labels an `only` or `except` audience may name.
pub const MAX_AUDIENCE_LABELS: usize = 20;
/// People an `only` or `except` audience may name one by one (more go in a
/// label: the post body, which every read of it carries, stays small).
pub const MAX_AUDIENCE_UIDS: usize = 200;
pub const MAX_DEVICE_CHARS: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Category {
    Text,
    Picture,
    Video,
    Link,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    #[default]
    Public,
    Followers,
    Friends,
    Private,
    /// The author and the friends the audience names, directly or through
    /// one of the author's labels (WeChat's 部分可见).
    Only,
    /// All the author's friends but those the audience names (不给谁看).
    Except,
}

impl Visibility {
    /// Whether this visibility takes an `audience`.
    pub fn names_an_audience(self) -> bool {
        matches!(self, Visibility::Only | Visibility::Except)
    }
}

/// Whom an `only` or `except` post names: labels of its author's (whose
/// members are read when the post is, so a label change applies to earlier
/// posts at once) and uids.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Audience {
    /// Ids of the author's labels.
    #[serde(default, deserialize_with = "super::id_list")]
    #[schema(schema_with = audience_labels_schema)]
    pub labels: Vec<i64>,
    #[serde(default, deserialize_with = "super::id_list")]
    #[schema(schema_with = audience_uids_schema)]
    pub uids: Vec<i64>,
}

impl Audience {
    /// Whether it names `uid` directly or through one of `labels_with_uid`
    /// (the author's labels that hold `uid`).
    pub fn names(&self, uid: i64, in_label: impl Fn(i64) -> bool) -> bool {
        self.uids.contains(&uid) || self.labels.iter().any(|l| in_label(*l))
    }

    fn parse(raw: Audience) -> Result<Self, AppError> {
        if raw.labels.len() > MAX_AUDIENCE_LABELS {
            return Err(AppError::invalid(
                "audience.labels",
                format!("at most {MAX_AUDIENCE_LABELS} labels"),
            ));
        }
        if raw.uids.len() > MAX_AUDIENCE_UIDS {
            return Err(AppError::invalid(
                "audience.uids",
                format!("at most {MAX_AUDIENCE_UIDS} people; put more in a label"),
            ));
        }
        let distinct = |field: &str, ids: Vec<i64>| -> Result<Vec<i64>, AppError> {
            let mut out: Vec<i64> = Vec::with_capacity(ids.len());
            for i in ids {
                if i < 1 {
                    return Err(AppError::invalid(field, "ids are positive"));
                }
                if !out.contains(&i) {
                    out.push(i);
                }
            }
            Ok(out)
        };
        let audience = Audience {
            labels: distinct("audience.labels", raw.labels)?,
            uids: distinct("audience.uids", raw.uids)?,
        };
        if audience.labels.is_empty() && audience.uids.is_empty() {
            return Err(AppError::invalid(
                "audience",
                "name at least one label or uid",
            ));
        }
        Ok(audience)
    }
}

fn audience_labels_schema() -> utoipa::openapi::Array {
    id_array_schema(MAX_AUDIENCE_LABELS)
}

fn audience_uids_schema() -> utoipa::openapi::Array {
    id_array_schema(MAX_AUDIENCE_UIDS)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Geo {
    #[schema(minimum = -90, maximum = 90)]
    pub lat: f64,
    #[schema(minimum = -180, maximum = 180)]
    pub lon: f64,
    /// A place name; blank is the same as none.
    #[serde(default)]
    #[schema(schema_with = geo_name_schema)]
    pub name: Option<String>,
}

pub const MAX_GEO_NAME_CHARS: usize = 100;

fn geo_name_schema() -> utoipa::openapi::Object {
    text_schema(MAX_GEO_NAME_CHARS, false, true)
}
fn content_schema() -> utoipa::openapi::Object {
    text_schema(MAX_CONTENT_CHARS, false, false)
}
fn device_schema() -> utoipa::openapi::Object {
    text_schema(MAX_DEVICE_CHARS, false, true)
}
fn picture_urls_schema() -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(url_schema(false, false))
        .max_items(Some(MAX_PICTURES))
        .build()
}

fn media_ids_schema() -> utoipa::openapi::Array {
    let mut a = id_array_schema(MAX_PICTURES);
    a.unique_items = true;
    a
}

fn mentions_schema() -> utoipa::openapi::Array {
    id_array_schema(MAX_MENTIONS)
}

/// The body of `POST /posts` as a client sends it. A post needs content
/// that is not blank or at least one picture; a PICTURE post needs a picture.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewPostRequest {
    pub category: Category,
    #[serde(default)]
    #[schema(schema_with = content_schema)]
    pub content: String,
    #[serde(default)]
    #[schema(schema_with = picture_urls_schema)]
    pub picture_urls: Vec<String>,
    /// Pictures uploaded with `POST /media`, in the order the post shows
    /// them: each the caller's, on no other post, each once; not with
    /// `pictureUrls`.
    #[serde(default, deserialize_with = "super::id_list")]
    #[schema(schema_with = media_ids_schema)]
    pub media_ids: Vec<i64>,
    /// The raw device model, as the phone reports it ("ONEPLUS A6000").
    #[serde(default)]
    #[schema(schema_with = device_schema)]
    pub device: Option<String>,
    #[serde(default)]
    pub geo: Option<Geo>,
    #[serde(default)]
    pub visibility: Visibility,
    /// Whom an `only` or `except` post names (required with those, refused
    /// with any other visibility).
    #[serde(default)]
    pub audience: Option<Audience>,
    /// Uids to notify (提醒谁看): at most 10, each one who may see the post.
    #[serde(default, deserialize_with = "super::id_list")]
    #[schema(schema_with = mentions_schema)]
    pub mentions: Vec<i64>,
}

/// A post that passed every check.
#[derive(Debug, Clone)]
pub struct NewPost {
    pub category: Category,
    pub content: String,
    pub picture_urls: Vec<String>,
    /// Distinct, in order; checked to be the author's and free when the
    /// post is published.
    pub media_ids: Vec<i64>,
    pub device: String,
    pub geo: Option<Geo>,
    pub visibility: Visibility,
    /// With `only` and `except`: distinct ids, at least one. The labels are
    /// checked to be the author's when the post is published.
    pub audience: Option<Audience>,
    /// Distinct, in the order given; checked against who may see the post
    /// when it is published.
    pub mentions: Vec<i64>,
}

impl NewPost {
    /// A public text post with nothing else on it, for seeding and
    /// benchmarks (which change what they need with `..`).
    pub fn text(content: impl Into<String>) -> Self {
        NewPost {
            category: Category::Text,
            content: content.into(),
            picture_urls: vec![],
            media_ids: vec![],
            device: String::new(),
            geo: None,
            visibility: Visibility::Public,
            audience: None,
            mentions: vec![],
        }
    }

    pub fn parse(req: NewPostRequest) -> Result<Self, AppError> {
        let content = parse_text("content", &req.content, MAX_CONTENT_CHARS, false)?;
        if req.picture_urls.len() > MAX_PICTURES {
            return Err(AppError::invalid(
                "pictureUrls",
                format!("at most {MAX_PICTURES} pictures"),
            ));
        }
        let picture_urls = req
            .picture_urls
            .iter()
            .enumerate()
            .map(|(i, u)| parse_http_url(&format!("pictureUrls[{i}]"), u))
            .collect::<Result<Vec<_>, _>>()?;
        // One kind of picture a post: the grid shows uploads or URLs.
        if !req.picture_urls.is_empty() && !req.media_ids.is_empty() {
            return Err(AppError::invalid(
                "mediaIds",
                "a post shows uploaded pictures or pictureUrls, not both",
            ));
        }
        if req.media_ids.len() > MAX_PICTURES {
            return Err(AppError::invalid(
                "mediaIds",
                format!("at most {MAX_PICTURES} pictures"),
            ));
        }
        let mut media_ids: Vec<i64> = Vec::with_capacity(req.media_ids.len());
        for (i, id) in req.media_ids.iter().enumerate() {
            if *id < 1 {
                return Err(AppError::invalid(
                    format!("mediaIds[{i}]"),
                    "ids are positive",
                ));
            }
            if media_ids.contains(id) {
                return Err(AppError::invalid(
                    format!("mediaIds[{i}]"),
                    "a picture can be on a post once",
                ));
            }
            media_ids.push(*id);
        }
        let pictures = picture_urls.len() + media_ids.len();
        match req.category {
            Category::Picture if pictures == 0 => {
                return Err(AppError::invalid(
                    "pictureUrls",
                    "a PICTURE post needs at least one picture",
                ))
            }
            _ if content.is_empty() && pictures == 0 => {
                return Err(AppError::invalid(
                    "content",
                    "a post needs content or pictures",
                ))
            }
            _ => {}
        }
        let device = parse_text(
            "device",
            req.device.as_deref().unwrap_or_default(),
            MAX_DEVICE_CHARS,
            false,
        )?;
        let geo = req.geo.map(parse_geo).transpose()?;
        if req.mentions.len() > MAX_MENTIONS {
            return Err(AppError::invalid(
                "mentions",
                format!("at most {MAX_MENTIONS} people"),
            ));
        }
        let mut mentions: Vec<i64> = Vec::with_capacity(req.mentions.len());
        for uid in req.mentions {
            if uid < 1 {
                return Err(AppError::invalid("mentions", "uids are positive"));
            }
            if !mentions.contains(&uid) {
                mentions.push(uid);
            }
        }
        let audience = match (req.visibility.names_an_audience(), req.audience) {
            (true, Some(a)) => Some(Audience::parse(a)?),
            (true, None) => {
                return Err(AppError::invalid(
                    "audience",
                    "an only or except post names its audience",
                ))
            }
            (false, Some(_)) => {
                return Err(AppError::invalid(
                    "audience",
                    "only an only or except post names an audience",
                ))
            }
            (false, None) => None,
        };
        Ok(Self {
            category: req.category,
            content,
            picture_urls,
            media_ids,
            device,
            geo,
            visibility: req.visibility,
            audience,
            mentions,
        })
    }
}

fn parse_geo(g: Geo) -> Result<Geo, AppError> {
    if !g.lat.is_finite() || !(-90.0..=90.0).contains(&g.lat) {
        return Err(AppError::invalid("geo.lat", "must be between -90 and 90"));
    }
    if !g.lon.is_finite() || !(-180.0..=180.0).contains(&g.lon) {
        return Err(AppError::invalid("geo.lon", "must be between -180 and 180"));
    }
    let name = g
        .name
        .map(|n| parse_text("geo.name", &n, MAX_GEO_NAME_CHARS, false))
        .transpose()?
        .filter(|n| !n.is_empty());
    Ok(Geo {
        lat: g.lat,
        lon: g.lon,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(json: serde_json::Value) -> Result<NewPost, AppError> {
        NewPost::parse(serde_json::from_value(json).unwrap())
    }

    fn field(r: Result<NewPost, AppError>) -> String {
        match r {
            Err(AppError::InvalidInput { field, .. }) => field,
            other => panic!("expected invalid input, got {other:?}"),
        }
    }

    #[test]
    fn a_picture_post_with_nine_pictures_is_fine() {
        let urls: Vec<String> = (0..9).map(|i| format!("https://cdn/p{i}.jpg")).collect();
        let p = req(serde_json::json!({"category":"PICTURE","content":"九张图 😀","pictureUrls":urls,"device":" ONEPLUS A6000 "})).unwrap();
        assert_eq!(p.picture_urls.len(), 9);
        assert_eq!(p.device, "ONEPLUS A6000");
        assert_eq!(p.visibility, Visibility::Public);
    }

    #[test]
    fn ten_pictures_name_the_field() {
        let urls: Vec<String> = (0..10).map(|i| format!("https://cdn/p{i}.jpg")).collect();
        assert_eq!(
            field(req(
                serde_json::json!({"category":"PICTURE","pictureUrls":urls})
            )),
            "pictureUrls"
        );
    }

    #[test]
    fn bad_picture_urls_name_their_index() {
        assert_eq!(
            field(req(
                serde_json::json!({"category":"PICTURE","pictureUrls":["https://a/b","file:///etc/passwd"]})
            )),
            "pictureUrls[1]"
        );
    }

    #[test]
    fn content_limits_count_characters() {
        assert!(req(serde_json::json!({"category":"TEXT","content":"字".repeat(5000)})).is_ok());
        assert_eq!(
            field(req(
                serde_json::json!({"category":"TEXT","content":"字".repeat(5001)})
            )),
            "content"
        );
        assert_eq!(
            field(req(serde_json::json!({"category":"TEXT","content":"   "}))),
            "content"
        );
    }

    #[test]
    fn only_and_except_need_an_audience_and_nothing_else_takes_one() {
        let only = req(
            serde_json::json!({"category":"TEXT","content":"x","visibility":"only",
            "audience":{"labels":[5,5],"uids":[7]}}),
        )
        .unwrap();
        assert_eq!(
            only.audience,
            Some(Audience {
                labels: vec![5],
                uids: vec![7]
            })
        );
        assert_eq!(
            field(req(
                serde_json::json!({"category":"TEXT","content":"x","visibility":"except"})
            )),
            "audience"
        );
        assert_eq!(
            field(req(
                serde_json::json!({"category":"TEXT","content":"x","visibility":"only","audience":{}})
            )),
            "audience"
        );
        assert_eq!(
            field(req(
                serde_json::json!({"category":"TEXT","content":"x","visibility":"public","audience":{"uids":[1]}})
            )),
            "audience"
        );
        let many: Vec<i64> = (1..=201).collect();
        assert_eq!(
            field(req(
                serde_json::json!({"category":"TEXT","content":"x","visibility":"only","audience":{"uids":many}})
            )),
            "audience.uids"
        );
        assert_eq!(
            field(req(
                serde_json::json!({"category":"TEXT","content":"x","visibility":"only","audience":{"labels":[0]}})
            )),
            "audience.labels"
        );
    }

    #[test]
    fn geo_ranges_are_checked() {
        assert_eq!(
            field(req(
                serde_json::json!({"category":"TEXT","content":"x","geo":{"lat":91,"lon":0}})
            )),
            "geo.lat"
        );
        assert_eq!(
            field(req(
                serde_json::json!({"category":"TEXT","content":"x","geo":{"lat":0,"lon":-181}})
            )),
            "geo.lon"
        );
        let p = req(serde_json::json!({"category":"TEXT","content":"x","geo":{"lat":31.2,"lon":121.5,"name":"上海"}})).unwrap();
        assert_eq!(p.geo.unwrap().name.as_deref(), Some("上海"));
    }
}
