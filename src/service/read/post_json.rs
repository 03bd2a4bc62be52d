//! An expanded post's JSON, written from a template made once per
//! snapshot of the post (`snapshot::PostSnapshot`): the text everyone is
//! sent, with holes for what differs by reader and by moment (whether
//! they liked it and its comments, the times as text, the device's name in
//! their language, the audience its author alone sees, the server's
//! clock). Filling the holes is copying text; building the post field by
//! field and serialising it was most of what a warm page cost.
//!
//! It is the only writer of an expanded post: a post read whole for one
//! reader (`write_post`) is a template made and filled at once. The text is
//! exactly what serialising `responses::ExpandedPost`, the type OpenAPI
//! documents, gives (a test compares them byte for byte).

use std::collections::HashMap;

use serde::Serialize;

use super::responses::{unknown_user, Page, ReplyToView};
use super::snapshot::{Hole, PostParts, PostSnapshot, PostSource, PostTemplate, LATEST_LIKES};
use crate::ids;
use crate::service::device_models::DeviceNames;
use crate::service::media::MediaView;
use crate::service::Presentation;
use crate::store::{PostBody, UserCard};

/// An expanded post as the API sends it: its JSON, and what callers ask
/// of it without reading it.
pub struct PostJson {
    pub id: i64,
    pub author: i64,
    /// Whether the reader liked it, and how many likes it shows them.
    pub liked: bool,
    pub like_count: u64,
    pub json: Vec<u8>,
}

impl PostJson {
    pub fn like_state(&self) -> (bool, u64) {
        (self.liked, self.like_count)
    }
}

/// For values serialised as part of others (an idempotent create's stored
/// answer): a written post is read back first, the slow way. Pages and
/// single posts are written with `page_bytes` and `to_bytes` instead.
impl Serialize for PostJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde_json::from_slice::<serde_json::Value>(&self.json)
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }
}

/// A page of posts as the API sends it: `Page<ExpandedPost>`'s JSON.
pub fn page_bytes(page: &Page<PostJson>) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024 + 2048 * page.items.len());
    out.extend_from_slice(b"{\"items\":[");
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&item.json);
    }
    out.extend_from_slice(b"],\"nextCursor\":");
    write_json(&mut out, &page.next_cursor);
    out.extend_from_slice(b",\"serverTime\":");
    write_int(&mut out, page.server_time);
    out.push(b'}');
    out
}

/// What one reader's copy of a post needs beyond its template.
pub struct ReaderPart<'a> {
    pub pres: &'a Presentation,
    pub devices: &'a DeviceNames,
    /// The reader is the post's author (who alone sees the audience).
    pub is_author: bool,
    pub liked: bool,
    /// Per comment of the snapshot, in order: whether the reader liked it.
    pub comments_liked: &'a [bool],
}

/// A post read whole for one reader, which no snapshot holds (a block or
/// WeChat's friends rule narrowed it, or it was not kept): its template
/// made and filled at once. Anyone without a card shows as an unknown user.
pub fn write_post(
    parts: &PostParts,
    cards: &HashMap<i64, UserCard>,
    media_base: &str,
    reader: &ReaderPart<'_>,
) -> Vec<u8> {
    PostTemplate::of(parts.source(), cards, media_base, Vec::new()).write(&parts.body, reader)
}

impl PostTemplate {
    /// The template of a snapshot, with the cards as this request read
    /// them (at these generations), if every person on it has one: an
    /// erased account's part is left out of what is shown, which only a
    /// post written whole for its reader does.
    pub fn make(
        snap: &PostSnapshot,
        cards: &HashMap<i64, UserCard>,
        media_base: &str,
        generation_of: impl Fn(i64) -> Option<u64>,
    ) -> Option<Self> {
        let mut gens = Vec::with_capacity(snap.people.len());
        for uid in &snap.people {
            cards.get(uid)?;
            gens.push((*uid, generation_of(*uid).filter(|g| *g != 0)?));
        }
        Some(Self::of(snap.source(), cards, media_base, gens))
    }

    /// The one place an expanded post's fields are laid out, in the order
    /// and with the names `ExpandedPost` serialises (a test holds them to
    /// it byte for byte).
    /// `media_base` is what media URLs start with (`MOMENTS_MEDIA_BASE_URL`).
    fn of(
        src: PostSource<'_>,
        cards: &HashMap<i64, UserCard>,
        media_base: &str,
        gens: Vec<(i64, u64)>,
    ) -> Self {
        let mut t = Writer::default();
        let b = src.body;
        t.raw(b"{\"id\":");
        t.int(b.id);
        t.raw(b",\"category\":");
        t.json(&b.category);
        t.raw(b",\"content\":");
        t.json(&b.content);
        t.raw(b",\"createtime\":");
        t.int(b.createtime);
        t.hole(Hole::TimeText {
            at: b.createtime,
            camel_time: false,
        });
        t.raw(b",\"device\":");
        t.hole(Hole::Device);
        t.raw(b",\"deviceModel\":");
        t.json(&b.device);
        t.raw(b",\"geo\":");
        t.json(&b.geo);
        t.raw(b",\"visibility\":");
        t.json(&b.visibility);
        t.hole(Hole::Audience);
        if let Some(moderation) = &b.moderation {
            t.raw(b",\"moderation\":");
            t.json(moderation);
        }
        t.raw(b",\"author\":");
        t.json(&card(cards, b.author_uid));
        t.raw(b",\"pictureUrls\":");
        t.json(&b.picture_urls);
        t.raw(b",\"media\":");
        t.json(
            &b.media
                .iter()
                .map(|m| MediaView::of(m, media_base))
                .collect::<Vec<_>>(),
        );
        t.raw(b",\"likeCount\":");
        t.uint(src.likers.count);
        t.raw(b",\"commentCount\":");
        t.uint(src.comment_count);
        t.raw(b",\"shareCount\":");
        t.uint(src.share_count);
        t.raw(b",\"viewCount\":");
        t.uint(src.view_count);
        t.raw(b",\"likedByMe\":");
        t.hole(Hole::LikedByMe);
        t.raw(b",\"comments\":[");
        for (i, c) in src.comments.iter().enumerate() {
            let d = &c.doc;
            if i > 0 {
                t.raw(b",");
            }
            t.raw(b"{\"id\":");
            t.int(d.id);
            t.raw(b",\"postId\":");
            t.int(d.post_id);
            t.raw(b",\"content\":");
            t.json(&d.content);
            t.raw(b",\"createtime\":");
            t.int(d.createtime);
            t.hole(Hole::TimeText {
                at: d.createtime,
                camel_time: false,
            });
            t.raw(b",\"author\":");
            t.json(&card(cards, d.author_uid));
            t.raw(b",\"replyTo\":");
            t.json(&d.reply_to.map(|r| ReplyToView {
                comment_id: r.comment_id,
                uid: r.uid,
                nick_name: card(cards, r.uid).nick_name,
            }));
            t.raw(b",\"likeCount\":");
            t.uint(c.likers.count);
            t.raw(b",\"commentCount\":");
            t.uint(c.replies.count);
            t.raw(b",\"likedByMe\":");
            t.hole(Hole::CommentLikedByMe(i));
            t.raw(b"}");
        }
        t.raw(b"],\"likes\":[");
        for (i, (uid, like_id)) in src.likers.top.iter().take(LATEST_LIKES).enumerate() {
            if i > 0 {
                t.raw(b",");
            }
            let at = ids::timestamp_of(*like_id);
            t.raw(b"{\"id\":");
            t.int(*like_id);
            t.raw(b",\"postId\":");
            t.int(b.id);
            t.raw(b",\"createTime\":");
            t.int(at);
            t.hole(Hole::TimeText {
                at,
                camel_time: true,
            });
            t.raw(b",\"user\":");
            t.json(&card(cards, *uid));
            t.raw(b"}");
        }
        t.raw(b"],\"serverTime\":");
        t.hole(Hole::ServerTime);
        t.raw(b"}");
        PostTemplate {
            text: t.text,
            holes: t.holes,
            cards: gens,
        }
    }

    /// Whether it still shows the cards as they are: each person's
    /// generation, as this request read it, is the one it was made with.
    pub fn stands(&self, generation_of: impl Fn(i64) -> Option<u64>) -> bool {
        self.cards
            .iter()
            .all(|(uid, g)| generation_of(*uid) == Some(*g))
    }

    /// The post as this reader is sent it.
    pub fn write(&self, body: &PostBody, reader: &ReaderPart<'_>) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.text.len() + 64 + 40 * self.holes.len());
        let mut from = 0;
        for (at, hole) in &self.holes {
            out.extend_from_slice(&self.text[from..*at]);
            from = *at;
            match hole {
                Hole::TimeText { at, camel_time } => {
                    if let Some(text) = reader.pres.text(*at) {
                        out.extend_from_slice(if *camel_time {
                            b",\"createTimeText\":"
                        } else {
                            b",\"createtimeText\":"
                        });
                        write_json(&mut out, &text);
                    }
                }
                Hole::Device => {
                    let name = reader
                        .devices
                        .display(&body.device, reader.pres.device_lang());
                    write_json(&mut out, &name);
                }
                Hole::Audience => {
                    if let (true, Some(audience)) = (reader.is_author, &body.audience) {
                        out.extend_from_slice(b",\"audience\":");
                        write_json(&mut out, audience);
                    }
                }
                Hole::LikedByMe => write_bool(&mut out, reader.liked),
                Hole::CommentLikedByMe(i) => write_bool(
                    &mut out,
                    reader.comments_liked.get(*i).copied() == Some(true),
                ),
                Hole::ServerTime => write_int(&mut out, reader.pres.now),
            }
        }
        out.extend_from_slice(&self.text[from..]);
        out
    }
}

fn card(cards: &HashMap<i64, UserCard>, uid: i64) -> UserCard {
    cards
        .get(&uid)
        .cloned()
        .unwrap_or_else(|| unknown_user(uid))
}

#[derive(Default)]
struct Writer {
    text: Vec<u8>,
    holes: Vec<(usize, Hole)>,
}

impl Writer {
    fn raw(&mut self, bytes: &[u8]) {
        self.text.extend_from_slice(bytes);
    }
    fn int(&mut self, n: i64) {
        write_int(&mut self.text, n);
    }
    fn uint(&mut self, n: u64) {
        write_json(&mut self.text, &n);
    }
    fn json<T: Serialize + ?Sized>(&mut self, v: &T) {
        write_json(&mut self.text, v);
    }
    fn hole(&mut self, hole: Hole) {
        self.holes.push((self.text.len(), hole));
    }
}

fn write_int(out: &mut Vec<u8>, n: i64) {
    write_json(out, &n);
}

fn write_bool(out: &mut Vec<u8>, b: bool) {
    out.extend_from_slice(if b { b"true" } else { b"false" });
}

/// Values that serialise infallibly (strings, numbers, plain structs).
fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    if serde_json::to_writer(&mut *out, v).is_err() {
        out.extend_from_slice(b"null");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::device_models::DisplayName;
    use crate::domain::lang::Lang;
    use crate::domain::media::{Encoding, Focus, Media, MediaKey};
    use crate::domain::post::{Audience, Category, Geo, Visibility};
    use crate::domain::time_text::TzOffset;
    use crate::service::device_models::DeviceNames;
    use crate::service::read::assemble::build_comment;
    use crate::service::read::responses::{ExpandedPost, LikeView};
    use crate::service::read::snapshot::CommentParts;
    use crate::store::{CommentDoc, PostDoc, PostModeration, ReplyRef, SetView};

    fn card_of(cards: &HashMap<i64, UserCard>, uid: i64) -> UserCard {
        super::card(cards, uid)
    }

    /// The post as `ExpandedPost`, field by field: what the written text
    /// must serialise to, made the plain way.
    fn build_post(
        parts: &PostParts,
        cards: &HashMap<i64, UserCard>,
        devices: &DeviceNames,
        pres: &Presentation,
    ) -> ExpandedPost {
        let media_base = MEDIA_BASE;
        let b = &parts.body;
        ExpandedPost {
            id: b.id,
            category: b.category,
            content: b.content.clone(),
            createtime: b.createtime,
            createtime_text: pres.text(b.createtime),
            device: devices.display(&b.device, pres.device_lang()),
            device_model: b.device.clone(),
            geo: b.geo.clone(),
            visibility: b.visibility,
            audience: None,
            moderation: b.moderation,
            author: card_of(cards, b.author_uid),
            picture_urls: b.picture_urls.clone(),
            media: b
                .media
                .iter()
                .map(|m| MediaView::of(m, media_base))
                .collect(),
            like_count: parts.likers.count,
            comment_count: parts.comment_count,
            share_count: parts.share_count,
            view_count: parts.view_count,
            liked_by_me: parts.likers.probe_score.is_some(),
            comments: parts
                .comments
                .iter()
                .map(|c| build_comment(c, cards, pres))
                .collect(),
            likes: parts
                .likers
                .top
                .iter()
                .map(|(uid, like_id)| {
                    let at = ids::timestamp_of(*like_id);
                    LikeView {
                        id: *like_id,
                        post_id: b.id,
                        create_time: at,
                        create_time_text: pres.text(at),
                        user: card_of(cards, *uid),
                    }
                })
                .collect(),
            server_time: pres.now,
        }
    }

    const HOUR: i64 = 3_600_000;
    const MEDIA_BASE: &str = "https://media.example/m";

    fn card(uid: i64) -> UserCard {
        UserCard {
            uid,
            nick_name: format!("用户\"{uid}\"\\"),
            head_img: format!("https://cdn.example/h/{uid}.jpg"),
        }
    }

    fn snapshot(with_everything: bool) -> PostSnapshot {
        let id = ids::next_id();
        let created = ids::timestamp_of(id);
        let author = 100;
        let comment = |n: i64, reply: Option<(i64, i64)>| CommentParts {
            doc: CommentDoc {
                reply_to: reply.map(|(c, uid)| ReplyRef { comment_id: c, uid }),
                ..CommentDoc::text(
                    id + n,
                    id,
                    200 + n,
                    format!("第{n}条 😀 \"quoted\"\n"),
                    created + n * 60_000,
                )
            },
            likers: SetView {
                count: n as u64,
                top: (0..n).map(|i| (300 + i, id + i)).collect(),
                probe_score: None,
            },
            replies: SetView {
                count: 1,
                top: Vec::new(),
                probe_score: None,
            },
        };
        let (comments, likers) = if with_everything {
            (
                vec![
                    comment(3, Some((id + 1, 201))),
                    comment(2, None),
                    comment(1, None),
                ],
                (0..25)
                    .map(|i| (400 + i, id + 1000 + i))
                    .collect::<Vec<_>>(),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        let mut people: Vec<i64> = std::iter::once(author)
            .chain(likers.iter().take(LATEST_LIKES).map(|(u, _)| *u))
            .chain(comments.iter().map(|c| c.doc.author_uid))
            .chain([201])
            .collect();
        people.sort_unstable();
        people.dedup();
        PostSnapshot {
            body: PostBody::from(PostDoc {
                category: if with_everything {
                    Category::Picture
                } else {
                    Category::Text
                },
                content: "第一行\n第二行 \u{1F600} </script> \\ \"".into(),
                picture_urls: if with_everything {
                    vec![
                        "https://cdn.example/p/1.jpg".into(),
                        "https://cdn.example/p/2.jpg".into(),
                    ]
                } else {
                    Vec::new()
                },
                media: if with_everything {
                    (0..2)
                        .map(|i| Media {
                            id: 700 + i,
                            key: MediaKey::random().unwrap(),
                            encoding: if i == 0 {
                                Encoding::Jpeg
                            } else {
                                Encoding::Png
                            },
                            width: 4032,
                            height: 3024,
                            size: 1_234_567,
                            preview_width: 640,
                            preview_height: 480,
                            blurhash: "LEHV6nWB2yk8pyo0adR*.7kCMdnj".into(),
                            description: format!("西湖 \"{i}\" \\ </script>"),
                            focus: (i == 0).then_some(Focus { x: -0.5, y: 0.25 }),
                        })
                        .collect()
                } else {
                    Vec::new()
                },
                device: if with_everything {
                    "ONEPLUS A6000".into()
                } else {
                    String::new()
                },
                geo: with_everything.then(|| Geo {
                    lat: 31.23,
                    lon: 121.47,
                    name: Some("上海".into()),
                }),
                visibility: if with_everything {
                    Visibility::Only
                } else {
                    Visibility::Public
                },
                audience: with_everything.then(|| Audience {
                    labels: vec![7],
                    uids: vec![201],
                }),
                ..PostDoc::text(id, author, "", created)
            }),
            likers: SetView {
                count: likers.len() as u64 + 40,
                top: likers.into_iter().take(LATEST_LIKES).collect(),
                probe_score: None,
            },
            comment_ids: SetView {
                count: 9,
                top: comments.iter().map(|c| (c.doc.id, c.doc.id)).collect(),
                probe_score: None,
            },
            share_count: 4,
            view_count: 77,
            comments,
            people,
            template: std::sync::OnceLock::new(),
        }
    }

    /// The parts a read that keeps no snapshot would have for this reader.
    fn parts_of(snap: &PostSnapshot, reader: &ReaderPart<'_>) -> PostParts {
        PostParts {
            body: snap.body.clone(),
            likers: SetView {
                probe_score: reader.liked.then_some(1),
                ..snap.likers.clone()
            },
            comment_count: snap.comment_ids.count,
            share_count: snap.share_count,
            view_count: snap.view_count,
            comments: snap
                .comments
                .iter()
                .zip(reader.comments_liked)
                .map(|(c, liked)| CommentParts {
                    likers: SetView {
                        probe_score: liked.then_some(1),
                        ..c.likers.clone()
                    },
                    ..c.clone()
                })
                .collect(),
        }
    }

    /// `ExpandedPost` as serde writes it, built field by field.
    fn built(
        parts: &PostParts,
        reader: &ReaderPart<'_>,
        cards: &HashMap<i64, UserCard>,
    ) -> Vec<u8> {
        let post = ExpandedPost {
            audience: parts.body.audience.clone().filter(|_| reader.is_author),
            ..build_post(parts, cards, reader.devices, reader.pres)
        };
        serde_json::to_vec(&post).unwrap()
    }

    #[test]
    fn a_written_post_is_expanded_post_serialised_byte_for_byte() {
        let devices = DeviceNames::from_rows([(
            "oneplus a6000".to_string(),
            DisplayName {
                zh: "一加 6".into(),
                en: "OnePlus \"6\"".into(),
            },
        )]);
        for with_everything in [false, true] {
            let snap = snapshot(with_everything);
            let cards: HashMap<i64, UserCard> =
                snap.people.iter().map(|u| (*u, card(*u))).collect();
            let template = PostTemplate::make(&snap, &cards, MEDIA_BASE, |_| Some(5)).unwrap();
            for lang in [None, Some(Lang::Zh), Some(Lang::En)] {
                for (is_author, liked) in [(false, false), (true, true), (false, true)] {
                    let pres = Presentation {
                        lang,
                        tz: TzOffset::default(),
                        now: snap.body.createtime + 3 * HOUR,
                    };
                    let comments_liked: Vec<bool> =
                        (0..snap.comments.len()).map(|i| i % 2 == 0).collect();
                    let reader = ReaderPart {
                        pres: &pres,
                        devices: &devices,
                        is_author,
                        liked,
                        comments_liked: &comments_liked,
                    };
                    let mut parts = parts_of(&snap, &reader);
                    let expected = built(&parts, &reader, &cards);
                    // From a snapshot's template, and written whole.
                    let from_template = template.write(&snap.body, &reader);
                    let whole = write_post(&parts, &cards, MEDIA_BASE, &reader);
                    for written in [from_template, whole] {
                        assert_eq!(
                            String::from_utf8_lossy(&written),
                            String::from_utf8_lossy(&expected),
                            "lang {lang:?}, author {is_author}, liked {liked}"
                        );
                    }
                    // What no snapshot holds: a post a moderator holds, and
                    // someone without a card.
                    parts.body.moderation = Some(PostModeration::Held);
                    let mut without_one = cards.clone();
                    without_one.remove(&snap.body.author_uid);
                    assert_eq!(
                        String::from_utf8_lossy(&write_post(
                            &parts,
                            &without_one,
                            MEDIA_BASE,
                            &reader
                        )),
                        String::from_utf8_lossy(&built(&parts, &reader, &without_one)),
                    );
                }
            }
        }
    }

    #[test]
    fn a_template_stands_while_the_cards_on_it_do() {
        let snap = snapshot(true);
        let cards: HashMap<i64, UserCard> = snap.people.iter().map(|u| (*u, card(*u))).collect();
        let template = PostTemplate::make(&snap, &cards, MEDIA_BASE, |_| Some(5)).unwrap();
        assert!(template.stands(|_| Some(5)));
        let changed = snap.people[1];
        assert!(!template.stands(|u| Some(if u == changed { 6 } else { 5 })));
        // No template without every card, nor without a generation for each.
        let mut missing = cards.clone();
        missing.remove(&changed);
        assert!(PostTemplate::make(&snap, &missing, MEDIA_BASE, |_| Some(5)).is_none());
        assert!(
            PostTemplate::make(&snap, &cards, MEDIA_BASE, |u| (u != changed).then_some(5))
                .is_none()
        );
        assert!(PostTemplate::make(&snap, &cards, MEDIA_BASE, |_| Some(0)).is_none());
    }

    #[test]
    fn a_page_of_posts_is_the_page_serialised() {
        let snap = snapshot(false);
        let cards: HashMap<i64, UserCard> = snap.people.iter().map(|u| (*u, card(*u))).collect();
        let devices = DeviceNames::new();
        let pres = Presentation::default();
        let reader = ReaderPart {
            pres: &pres,
            devices: &devices,
            is_author: false,
            liked: false,
            comments_liked: &[],
        };
        let written = PostTemplate::make(&snap, &cards, MEDIA_BASE, |_| Some(1))
            .unwrap()
            .write(&snap.body, &reader);
        let value: serde_json::Value = serde_json::from_slice(&written).unwrap();
        let page = Page {
            items: vec![
                PostJson {
                    id: snap.body.id,
                    author: snap.body.author_uid,
                    liked: false,
                    like_count: 0,
                    json: written,
                },
                PostJson {
                    id: 0,
                    author: 0,
                    liked: false,
                    like_count: 0,
                    json: b"{}".to_vec(),
                },
            ],
            next_cursor: Some("c\"1".into()),
            server_time: 42,
        };
        let bytes = page_bytes(&page);
        let expected = serde_json::json!({
            "items": [value, {}],
            "nextCursor": "c\"1",
            "serverTime": 42,
        });
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&bytes).unwrap(),
            expected
        );
    }
}
