//! An expanded post's JSON, written from a template made once per
//! snapshot of the post (`snapshot::PostSnapshot`): the text everyone is
//! sent, with holes for what differs by reader and by moment (whether
//! they liked it and its comments, the times as text, the device's name in
//! their language, the audience its author alone sees, the server's
//! clock). Filling the holes is copying text; building the post field by
//! field and serialising it was most of what a warm page cost.
//!
//! The text is exactly what serialising `ExpandedPost` gives (a test
//! compares them byte for byte), so a client cannot tell which way a post
//! was made.

use std::collections::HashMap;

use serde::Serialize;

use super::responses::{unknown_user, ExpandedPost, Page, ReplyToView};
use super::snapshot::{Hole, PostSnapshot, PostTemplate, LATEST_LIKES};
use crate::ids;
use crate::service::device_names::DeviceNames;
use crate::service::Presentation;
use crate::store::UserCard;

/// An expanded post as the API sends it.
pub enum PostJson {
    Built(Box<ExpandedPost>),
    /// Written from a template: the post's text, and what callers ask of
    /// it without reading it.
    Written {
        id: i64,
        author: i64,
        liked: bool,
        like_count: u64,
        json: Vec<u8>,
    },
}

impl PostJson {
    pub fn id(&self) -> i64 {
        match self {
            PostJson::Built(p) => p.id,
            PostJson::Written { id, .. } => *id,
        }
    }

    pub fn author(&self) -> i64 {
        match self {
            PostJson::Built(p) => p.author.uid,
            PostJson::Written { author, .. } => *author,
        }
    }

    /// Whether the reader liked it, and how many likes it shows them.
    pub fn like_state(&self) -> (bool, u64) {
        match self {
            PostJson::Built(p) => (p.liked_by_me, p.like_count),
            PostJson::Written {
                liked, like_count, ..
            } => (*liked, *like_count),
        }
    }

    /// Appends the post's JSON to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        match self {
            PostJson::Built(p) => serde_json::to_writer(out, p),
            PostJson::Written { json, .. } => {
                out.extend_from_slice(json);
                Ok(())
            }
        }
    }

    pub fn to_bytes(&self) -> serde_json::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(2048);
        self.write_to(&mut out)?;
        Ok(out)
    }
}

/// For values serialised as part of others (an idempotent create's stored
/// answer): a written post is read back first, the slow way. Pages and
/// single posts are written with `page_bytes` and `to_bytes` instead.
impl Serialize for PostJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PostJson::Built(p) => p.serialize(s),
            PostJson::Written { json, .. } => serde_json::from_slice::<serde_json::Value>(json)
                .map_err(serde::ser::Error::custom)?
                .serialize(s),
        }
    }
}

/// A page of posts as the API sends it: `Page<ExpandedPost>`'s JSON.
pub fn page_bytes(page: &Page<PostJson>) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(1024 + 2048 * page.items.len());
    out.extend_from_slice(b"{\"items\":[");
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        item.write_to(&mut out)?;
    }
    out.extend_from_slice(b"],\"nextCursor\":");
    serde_json::to_writer(&mut out, &page.next_cursor)?;
    out.extend_from_slice(b",\"serverTime\":");
    write_int(&mut out, page.server_time);
    out.push(b'}');
    Ok(out)
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

impl PostTemplate {
    /// The template of a snapshot, with the cards as this request read
    /// them (at these generations), if every person on it has one: an
    /// erased account's part is left out of what is shown, which only a
    /// built post does.
    pub fn make(
        snap: &PostSnapshot,
        cards: &HashMap<i64, UserCard>,
        generation_of: impl Fn(i64) -> Option<u64>,
    ) -> Option<Self> {
        let mut gens = Vec::with_capacity(snap.people.len());
        for uid in &snap.people {
            cards.get(uid)?;
            gens.push((*uid, generation_of(*uid).filter(|g| *g != 0)?));
        }
        let mut t = Writer::default();
        let b = &snap.body;
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
        t.raw(b",\"author\":");
        t.json(&card(cards, b.author_uid));
        t.raw(b",\"pictureUrls\":");
        t.json(&b.picture_urls);
        t.raw(b",\"likeCount\":");
        t.uint(snap.likers.count);
        t.raw(b",\"commentCount\":");
        t.uint(snap.comment_ids.count);
        t.raw(b",\"shareCount\":");
        t.uint(snap.share_count);
        t.raw(b",\"viewCount\":");
        t.uint(snap.view_count);
        t.raw(b",\"likedByMe\":");
        t.hole(Hole::LikedByMe);
        t.raw(b",\"comments\":[");
        for (i, c) in snap.comments.iter().enumerate() {
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
        for (i, (uid, like_id)) in snap.likers.top.iter().take(LATEST_LIKES).enumerate() {
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
        Some(PostTemplate {
            text: t.text,
            holes: t.holes,
            cards: gens,
        })
    }

    /// Whether it still shows the cards as they are: each person's
    /// generation, as this request read it, is the one it was made with.
    pub fn stands(&self, generation_of: impl Fn(i64) -> Option<u64>) -> bool {
        self.cards
            .iter()
            .all(|(uid, g)| generation_of(*uid) == Some(*g))
    }

    /// The post as this reader is sent it.
    pub fn write(&self, snap: &PostSnapshot, reader: &ReaderPart<'_>) -> Vec<u8> {
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
                        .display(&snap.body.device, reader.pres.device_lang());
                    write_json(&mut out, &name);
                }
                Hole::Audience => {
                    if let (true, Some(audience)) = (reader.is_author, &snap.body.audience) {
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
    use crate::domain::device::DisplayName;
    use crate::domain::lang::Lang;
    use crate::domain::post::{Audience, Category, Geo, Visibility};
    use crate::domain::time_text::TzOffset;
    use crate::service::read::assemble::{build_post, PostParts};
    use crate::service::read::snapshot::CommentParts;
    use crate::store::{CommentDoc, PostBody, PostDoc, ReplyRef, SetView};

    const HOUR: i64 = 3_600_000;

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

    /// The post as `assemble` builds it for this reader, serialised.
    fn built(
        snap: &PostSnapshot,
        reader: &ReaderPart<'_>,
        cards: &HashMap<i64, UserCard>,
    ) -> Vec<u8> {
        let parts = PostParts {
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
        };
        let post = ExpandedPost {
            audience: snap.body.audience.clone().filter(|_| reader.is_author),
            ..build_post(&parts, cards, reader.devices, reader.pres)
        };
        serde_json::to_vec(&post).unwrap()
    }

    #[test]
    fn a_written_post_is_the_built_one_byte_for_byte() {
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
            let template = PostTemplate::make(&snap, &cards, |_| Some(5)).unwrap();
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
                    let written = template.write(&snap, &reader);
                    let expected = built(&snap, &reader, &cards);
                    assert_eq!(
                        String::from_utf8_lossy(&written),
                        String::from_utf8_lossy(&expected),
                        "lang {lang:?}, author {is_author}, liked {liked}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_template_stands_while_the_cards_on_it_do() {
        let snap = snapshot(true);
        let cards: HashMap<i64, UserCard> = snap.people.iter().map(|u| (*u, card(*u))).collect();
        let template = PostTemplate::make(&snap, &cards, |_| Some(5)).unwrap();
        assert!(template.stands(|_| Some(5)));
        let changed = snap.people[1];
        assert!(!template.stands(|u| Some(if u == changed { 6 } else { 5 })));
        // No template without every card, nor without a generation for each.
        let mut missing = cards.clone();
        missing.remove(&changed);
        assert!(PostTemplate::make(&snap, &missing, |_| Some(5)).is_none());
        assert!(PostTemplate::make(&snap, &cards, |u| (u != changed).then_some(5)).is_none());
        assert!(PostTemplate::make(&snap, &cards, |_| Some(0)).is_none());
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
        let written = PostTemplate::make(&snap, &cards, |_| Some(1))
            .unwrap()
            .write(&snap, &reader);
        let value: serde_json::Value = serde_json::from_slice(&written).unwrap();
        let page = Page {
            items: vec![
                PostJson::Written {
                    id: snap.body.id,
                    author: snap.body.author_uid,
                    liked: false,
                    like_count: 0,
                    json: written,
                },
                PostJson::Written {
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
        let bytes = page_bytes(&page).unwrap();
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
