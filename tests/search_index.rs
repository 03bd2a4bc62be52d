//! The search index against a real engine: what it finds, in what order,
//! through which filters, and what it keeps across a reopen. The embedded
//! index in a folder; with MOMENTS_TEST_SEARCH=opensearch the same tests
//! (all but the one about the embedded index's own files) run against the
//! OpenSearch node scripts/test.sh starts, an index of their own each.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use moments::domain::search_text::{terms, Cut};
use moments::store::embedded::search::EmbeddedSearch;
use moments::store::opensearch::OpenSearchIndex;
use moments::store::search::{IndexedPost, PostSearch, SearchIndex};

fn folder() -> std::path::PathBuf {
    let mut bytes = [0u8; 8];
    getrandom::getrandom(&mut bytes).unwrap();
    let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    std::env::temp_dir().join(format!("moments-search-{name}"))
}

/// The index under test, kept in `dir` (or named after it on OpenSearch).
fn open(dir: &std::path::Path) -> Box<dyn SearchIndex> {
    if std::env::var("MOMENTS_TEST_SEARCH").as_deref() == Ok("opensearch") {
        let url = std::env::var("MOMENTS_TEST_OPENSEARCH_URL")
            .expect("MOMENTS_TEST_OPENSEARCH_URL: run scripts/test.sh, which starts OpenSearch");
        let name = dir.file_name().unwrap().to_str().unwrap();
        return Box::new(OpenSearchIndex::new(&url, name).unwrap());
    }
    Box::new(EmbeddedSearch::open(dir).unwrap())
}

fn post(id: i64, author: i64, content: &str) -> IndexedPost {
    IndexedPost {
        id,
        author,
        createtime: id * 1000,
        content: content.into(),
        has_media: false,
        findable: true,
    }
}

/// The ids of what `search` finds.
async fn ids_of(
    index: &dyn SearchIndex,
    search: &PostSearch,
) -> moments::store::StoreResult<Vec<i64>> {
    let hits = index.search_posts(search).await?;
    Ok(hits.into_iter().map(|h| h.id).collect())
}

fn asking(q: &str) -> PostSearch {
    PostSearch {
        terms: terms(q, Cut::Querying)
            .into_iter()
            .map(|t| t.text)
            .collect(),
        limit: 20,
        ..PostSearch::default()
    }
}

/// Asserts that the best page of each of `limits` is the head of `whole`,
/// the ranking of every match of `q`.
async fn each_page_heads(index: &dyn SearchIndex, q: &str, whole: &[i64], limits: &[usize]) {
    for &limit in limits {
        assert_eq!(
            best_of(index, q, limit).await,
            whole[..limit],
            "the best {limit}"
        );
    }
}

/// The ids of the `limit` best matches of `q`, best first.
async fn best_of(index: &dyn SearchIndex, q: &str, limit: usize) -> Vec<i64> {
    index
        .search_posts_by_relevance(&PostSearch { limit, ..asking(q) })
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.hit.id)
        .collect()
}

#[tokio::test]
async fn posts_are_found_by_their_words_newest_first_through_the_filters() {
    let dir = folder();
    let index = open(&dir);
    index
        .index_posts(&[
            post(1, 10, "我们今天去西湖划船"),
            post(2, 11, "West Lake at sunset, rowing a boat"),
            post(3, 10, "西湖的日落 sunset over the lake"),
            IndexedPost {
                has_media: true,
                ..post(4, 12, "又去西湖了，拍了九张照片")
            },
            IndexedPost {
                findable: false,
                ..post(5, 13, "只给朋友看的西湖")
            },
        ])
        .await
        .unwrap();
    // Each hit with its author, for the rules that answer it.
    let hits = index.search_posts(&asking("西湖")).await.unwrap();
    let found: Vec<(i64, i64)> = hits.iter().map(|h| (h.id, h.author)).collect();
    assert_eq!(found, [(4, 12), (3, 10), (1, 10)]);
    assert_eq!(
        ids_of(index.as_ref(), &asking("Sunsets")).await.unwrap(),
        [3, 2]
    );
    assert_eq!(
        ids_of(index.as_ref(), &asking("西湖 sunset"))
            .await
            .unwrap(),
        [3]
    );
    assert!(ids_of(index.as_ref(), &asking("北京"))
        .await
        .unwrap()
        .is_empty());
    // Not findable: only a reader whose circle holds its author finds it.
    let circle = PostSearch {
        circle: vec![13],
        ..asking("西湖")
    };
    assert_eq!(ids_of(index.as_ref(), &circle).await.unwrap(), [5, 4, 3, 1]);
    // The page cursor, the author, pictures, the days.
    let page = PostSearch {
        before: Some(4),
        limit: 1,
        ..asking("西湖")
    };
    assert_eq!(ids_of(index.as_ref(), &page).await.unwrap(), [3]);
    let from = PostSearch {
        from: Some(10),
        ..asking("西湖")
    };
    assert_eq!(ids_of(index.as_ref(), &from).await.unwrap(), [3, 1]);
    let only_author = PostSearch {
        from: Some(11),
        limit: 20,
        ..PostSearch::default()
    };
    assert_eq!(ids_of(index.as_ref(), &only_author).await.unwrap(), [2]);
    let media = PostSearch {
        has_media: true,
        ..asking("西湖")
    };
    assert_eq!(ids_of(index.as_ref(), &media).await.unwrap(), [4]);
    let days = PostSearch {
        since: Some(2000),
        until: Some(4000),
        ..asking("西湖")
    };
    assert_eq!(ids_of(index.as_ref(), &days).await.unwrap(), [3]);

    // Indexing a post again replaces it; removing forgets it.
    index
        .index_posts(&[post(3, 10, "no longer about that lake")])
        .await
        .unwrap();
    assert_eq!(
        ids_of(index.as_ref(), &asking("西湖")).await.unwrap(),
        [4, 1]
    );
    index.remove_posts(&[4, 99]).await.unwrap();
    assert_eq!(ids_of(index.as_ref(), &asking("西湖")).await.unwrap(), [1]);
    // An erased account's posts, all at once.
    index.remove_authors(&[10, 98]).await.unwrap();
    assert!(ids_of(index.as_ref(), &asking("西湖"))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        ids_of(index.as_ref(), &asking("rowing")).await.unwrap(),
        [2]
    );
    drop(index);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn how_far_indexing_got_is_kept_with_what_it_indexed() {
    let dir = folder();
    let index = open(&dir);
    assert_eq!(index.indexed_through().await.unwrap(), None);
    index
        .index_posts_through(&[post(7, 1, "kept across a restart")], 7)
        .await
        .unwrap();
    // Changes that move no mark keep the one there.
    index.remove_posts(&[1]).await.unwrap();
    index
        .index_posts(&[post(8, 1, "indexed out of order")])
        .await
        .unwrap();
    assert_eq!(index.indexed_through().await.unwrap(), Some(7));
    drop(index);
    let reopened = open(&dir);
    assert_eq!(reopened.indexed_through().await.unwrap(), Some(7));
    assert_eq!(
        ids_of(reopened.as_ref(), &asking("restart")).await.unwrap(),
        [7]
    );
    // Cleared: nothing, and no mark, so that indexing starts again.
    reopened.clear().await.unwrap();
    assert_eq!(reopened.indexed_through().await.unwrap(), None);
    assert!(ids_of(reopened.as_ref(), &asking("restart"))
        .await
        .unwrap()
        .is_empty());
    drop(reopened);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn by_relevance_the_better_match_ranks_first_and_filters_score_nothing() {
    let dir = folder();
    let index = open(&dir);
    index
        .index_posts(&[
            post(1, 10, "West Lake, the lake, the lake at dawn"),
            post(
                2,
                10,
                "a long walk by the river, the hills, the old town and then a lake",
            ),
            post(3, 11, "lake lake lake"),
            IndexedPost {
                findable: false,
                ..post(4, 12, "a lake only friends see")
            },
            post(5, 10, "nothing about water"),
        ])
        .await
        .unwrap();
    let by_relevance = |search: PostSearch| {
        let index = &index;
        async move {
            index
                .search_posts_by_relevance(&search)
                .await
                .unwrap()
                .into_iter()
                .map(|h| (h.hit.id, h.hit.author, h.score))
                .collect::<Vec<_>>()
        }
    };
    let ranked = by_relevance(PostSearch {
        limit: 10,
        ..asking("lake")
    })
    .await;
    let ids: Vec<i64> = ranked.iter().map(|h| h.0).collect();
    // More of the word in a shorter text first; one mention in a long one
    // last; the post outside the circle and not findable not at all.
    assert_eq!(ids, [3, 1, 2]);
    assert!(ranked.windows(2).all(|w| w[0].2 >= w[1].2), "{ranked:?}");
    assert_eq!(ranked[0].1, 11);
    // In the circle, whether findable scores nothing: the same scores.
    let with_circle = by_relevance(PostSearch {
        limit: 10,
        circle: vec![10, 11, 12],
        ..asking("lake")
    })
    .await;
    let scores = |r: &[(i64, i64, f32)], id: i64| r.iter().find(|h| h.0 == id).unwrap().2;
    assert_eq!(scores(&with_circle, 3), scores(&ranked, 3));
    assert!(with_circle.iter().any(|h| h.0 == 4));
    // The limit is the depth: the best first.
    let top = by_relevance(PostSearch {
        limit: 1,
        ..asking("lake")
    })
    .await;
    assert_eq!(top.iter().map(|h| h.0).collect::<Vec<_>>(), [3]);
    // A score comes from the post's own text: a thousand more posts of
    // the word move none, so it tells nothing of how many hold it.
    let more: Vec<IndexedPost> = (100..1100)
        .map(|i| IndexedPost {
            findable: false,
            ..post(i, 99, "lake lake and more lake")
        })
        .collect();
    index.index_posts(&more).await.unwrap();
    let again = by_relevance(PostSearch {
        limit: 10,
        ..asking("lake")
    })
    .await;
    assert_eq!(again, ranked);
    // Of equal scores the newest, and the cut at the limit keeps them.
    let same = by_relevance(PostSearch {
        limit: 3,
        circle: vec![99],
        from: Some(99),
        ..asking("lake")
    })
    .await;
    assert_eq!(
        same.iter().map(|h| h.0).collect::<Vec<_>>(),
        [1099, 1098, 1097]
    );
    drop(index);
    let _ = std::fs::remove_dir_all(dir);
}

/// The newest page is read segment by segment, the newest segments first,
/// and stops early: across many commits, with posts indexed again into a
/// later segment (an old id among new ones) and posts removed, every page
/// is still exactly the newest matches below the cursor.
#[tokio::test]
async fn the_newest_come_first_across_segments_whatever_order_they_were_indexed_in() {
    let dir = folder();
    let index = open(&dir);
    let text = |id: i64| {
        if id % 3 == 0 {
            "rowing on the lake"
        } else {
            "a walk in town"
        }
    };
    // Each commit a segment (the writer may merge some of them).
    for start in (1..=300).step_by(50) {
        let batch: Vec<IndexedPost> = (start..start + 50)
            .map(|id| IndexedPost {
                findable: id % 4 != 0,
                ..post(id, id % 7, text(id))
            })
            .collect();
        index.index_posts(&batch).await.unwrap();
    }
    // Old posts written again, and one removed, after all of them.
    index
        .index_posts(&[post(10, 3, "back on the lake"), post(12, 5, "town again")])
        .await
        .unwrap();
    index.remove_posts(&[297]).await.unwrap();
    let mut matching: Vec<i64> = (1..=300)
        .filter(|id| (id % 3 == 0 && id % 4 != 0 && *id != 12 && *id != 297) || *id == 10)
        .collect();
    matching.sort_unstable_by(|a, b| b.cmp(a));
    for limit in [1, 7, 20] {
        let mut paged = Vec::new();
        let mut before = None;
        loop {
            let page = ids_of(
                index.as_ref(),
                &PostSearch {
                    before,
                    limit,
                    ..asking("lake")
                },
            )
            .await
            .unwrap();
            assert!(page.len() <= limit);
            if page.is_empty() {
                break;
            }
            before = page.last().copied();
            paged.extend(page);
        }
        assert_eq!(paged, matching, "pages of {limit}");
    }
    // The circle reaches the posts that are not findable, in the same order.
    let circle = PostSearch {
        circle: vec![0, 4],
        limit: 500,
        ..asking("lake")
    };
    let mut reached: Vec<i64> = (1..=300)
        .filter(|id| id % 3 == 0 && *id != 12 && *id != 297)
        .filter(|id| id % 4 != 0 || [0, 4].contains(&(id % 7)))
        .chain([10])
        .collect();
    reached.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(ids_of(index.as_ref(), &circle).await.unwrap(), reached);
    drop(index);
    let _ = std::fs::remove_dir_all(dir);
}

/// An index an older version made (other fields) is emptied and filled
/// again from the first post; while that version's instance holds it, it
/// is refused and left as it is.
#[tokio::test]
async fn an_index_of_another_version_is_started_again_unless_in_use() {
    let dir = folder();
    std::fs::create_dir_all(&dir).unwrap();
    let mut older = tantivy::schema::Schema::builder();
    let word = older.add_text_field("word", tantivy::schema::TEXT);
    let old = tantivy::Index::create_in_dir(&dir, older.build()).unwrap();
    let mut writer: tantivy::IndexWriter = old.writer_with_num_threads(1, 15_000_000).unwrap();
    writer
        .add_document(tantivy::doc!(word => "an older post"))
        .unwrap();
    let mut commit = writer.prepare_commit().unwrap();
    commit.set_payload("42");
    commit.commit().unwrap();
    // In use by its instance: refused, and nothing deleted.
    assert!(EmbeddedSearch::open(&dir).is_err());
    assert!(tantivy::Index::open_in_dir(&dir).is_ok());
    drop(writer);
    drop(old);
    let index = EmbeddedSearch::open(&dir).unwrap();
    assert_eq!(index.indexed_through().await.unwrap(), None);
    index
        .index_posts_through(&[post(3, 1, "the new lake")], 3)
        .await
        .unwrap();
    assert_eq!(ids_of(&index, &asking("lake")).await.unwrap(), [3]);
    drop(index);
    let reopened = EmbeddedSearch::open(&dir).unwrap();
    assert_eq!(reopened.indexed_through().await.unwrap(), Some(3));
    drop(reopened);
    let _ = std::fs::remove_dir_all(dir);
}

/// Ranked with the index skipping what cannot enter the page: of many
/// equal scores across segments the newest are kept, and a better match
/// indexed first and among the oldest still comes first.
#[tokio::test]
async fn by_relevance_ties_keep_the_newest_across_segments() {
    let dir = folder();
    let index = open(&dir);
    index
        .index_posts(&[post(1, 1, "kite kite kite")])
        .await
        .unwrap();
    for start in (2..=400).step_by(100) {
        let batch: Vec<IndexedPost> = (start..start + 100)
            .map(|id| post(id, id % 5, "a kite on the hill"))
            .collect();
        index.index_posts(&batch).await.unwrap();
    }
    let ranked = index
        .search_posts_by_relevance(&PostSearch {
            limit: 6,
            ..asking("kite")
        })
        .await
        .unwrap();
    let ids: Vec<i64> = ranked.iter().map(|h| h.hit.id).collect();
    assert_eq!(ids, [1, 401, 400, 399, 398, 397]);
    assert!(ranked[0].score > ranked[1].score, "{ranked:?}");
    assert!(ranked[1..].windows(2).all(|w| w[0].score == w[1].score));
    drop(index);
    let _ = std::fs::remove_dir_all(dir);
}

/// The best page is the head of the whole ranking, also where a segment's
/// own average length is far above the fixed one the scores use: the
/// index chooses a block's best match by the segment's average, here a
/// long post saying the word three times, while by the fixed one a post
/// of the word alone in the same block scores higher. The first block
/// fills the page (one segment, walked in order), so a bound taken from
/// the index's choice as it stands would pass the second block over.
/// Seven of the matches are strong (the word twice in two words, or
/// alone), so pages of up to seven come from the strong matches alone and
/// longer ones from scoring every match: both must agree with the whole.
#[tokio::test]
async fn by_relevance_the_best_page_is_the_head_of_the_whole_ranking() {
    let dir = folder();
    let index = open(&dir);
    let filler = |n: usize, from: usize| -> String {
        (from..from + n)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let three = format!("kite kite kite {}", filler(27, 300));
    // The first block of the word's 128 posts: six strong matches, one
    // weaker, and matches of three in thirty words.
    let mut posts: Vec<IndexedPost> = (1..=6).map(|id| post(id, 1, "kite kite")).collect();
    posts.push(post(7, 1, "kite w1 w2"));
    posts.extend((8..129).map(|id| post(id, 1, &three)));
    // The second block: more of those, and one post of the word alone,
    // which outranks the weaker; then a few more, and long posts
    // without the word, which raise the segment's average.
    posts.extend((129..256).map(|id| post(id, 1, &three)));
    posts.push(post(256, 1, "kite"));
    posts.extend((257..270).map(|id| post(id, 1, &three)));
    posts.extend((1000..1400).map(|id| post(id, 1, &filler(200, 0))));
    index.index_posts(&posts).await.unwrap();
    let whole = best_of(index.as_ref(), "kite", 1000).await;
    assert_eq!(whole.len(), 269);
    assert_eq!(whole[6], 256, "{whole:?}");
    assert_eq!(whole[7], 7, "{whole:?}");
    each_page_heads(index.as_ref(), "kite", &whole, &[1, 6, 7, 8, 20]).await;
    drop(index);
    let _ = std::fs::remove_dir_all(dir);
}

/// The other way round: in a segment of posts far shorter than the fixed
/// average, a block's best match by the segment's own average is a short
/// post, while by the fixed one a long post saying the word twenty times
/// scores higher still. The first block fills the page; the second,
/// which holds the long post, must not be passed over. Every match here
/// is strong, so the strong matches alone answer each page.
#[tokio::test]
async fn by_relevance_a_long_match_among_short_posts_is_not_passed_over() {
    let dir = folder();
    let index = open(&dir);
    let long = format!(
        "{} {}",
        ["kite"; 20].join(" "),
        (0..20)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut posts: Vec<IndexedPost> = (1..=8).map(|id| post(id, 1, "kite kite")).collect();
    posts.extend((9..300).map(|id| post(id, 1, if id == 250 { &long } else { "kite" })));
    index.index_posts(&posts).await.unwrap();
    let whole = best_of(index.as_ref(), "kite", 1000).await;
    assert_eq!(whole.len(), 299);
    assert_eq!(whole[0], 250, "{whole:?}");
    assert_eq!(whole[1..9], [8, 7, 6, 5, 4, 3, 2, 1]);
    each_page_heads(index.as_ref(), "kite", &whole, &[1, 8, 9, 10, 40]).await;
    drop(index);
    let _ = std::fs::remove_dir_all(dir);
}

/// By relevance, several words rank the newest `window` matches the search
/// reaches on the embedded index (every match on OpenSearch), best first.
/// Each segment is read from its newest post down: the last segment here
/// holds an old post said again and a new one, and comes second by its
/// newest, so a walk from its oldest would stop before the new one (as
/// a newest-first search's would).
#[tokio::test]
async fn by_relevance_several_words_rank_the_newest_matches_within_the_window() {
    let dir = folder();
    let index = open(&dir);
    let opensearch = std::env::var("MOMENTS_TEST_SEARCH").as_deref() == Ok("opensearch");
    let hidden = IndexedPost {
        findable: false,
        ..post(9, 7, "kite river kite river kite river")
    };
    // A segment a batch.
    let batches = [
        vec![
            post(1, 1, "kite river kite river"),
            post(2, 1, "a kite by the river"),
            post(3, 1, "a kite by the river at dusk with friends"),
            post(4, 1, "kite and river"),
        ],
        vec![
            post(5, 1, "a kite by the river at dusk"),
            post(6, 1, "kite kite over the river"),
            post(7, 1, "the river alone"),
            post(8, 1, "a kite and a long walk by the river today"),
            hidden,
            post(12, 1, "kite over a river"),
        ],
        vec![
            post(2, 1, "kite river kite river kite"),
            post(10, 1, "a kite over the river"),
        ],
    ];
    for batch in batches {
        index.index_posts(&batch).await.unwrap();
    }
    let ranked = |window: Option<usize>| {
        let index = &index;
        async move {
            index
                .search_posts_by_relevance(&PostSearch {
                    limit: 20,
                    window,
                    ..asking("kite river")
                })
                .await
                .unwrap()
                .into_iter()
                .map(|h| h.hit.id)
                .collect::<Vec<i64>>()
        }
    };
    // Newest first stops in a segment the same way.
    assert_eq!(
        ids_of(
            index.as_ref(),
            &PostSearch {
                limit: 2,
                ..asking("kite river")
            }
        )
        .await
        .unwrap(),
        [12, 10]
    );
    // Every match the search reaches (not 7, without the kite, nor 9,
    // which its author keeps from being found), best first.
    let whole = ranked(None).await;
    let mut reached = whole.clone();
    reached.sort_unstable();
    assert_eq!(reached, [1, 2, 3, 4, 5, 6, 8, 10, 12]);
    assert_eq!(whole[0], 2, "said most, in the fewest words: {whole:?}");
    for (window, newest) in [
        (3, vec![12, 10, 8]),
        (6, vec![12, 10, 8, 6, 5, 4]),
        (8, vec![12, 10, 8, 6, 5, 4, 3, 2]),
    ] {
        let expected: Vec<i64> = if opensearch {
            whole.clone()
        } else {
            whole
                .iter()
                .copied()
                .filter(|id| newest.contains(id))
                .collect()
        };
        assert_eq!(ranked(Some(window)).await, expected, "window {window}");
    }
    drop(index);
    let _ = std::fs::remove_dir_all(dir);
}

/// The indexer's pass commits what it read in one commit with its mark,
/// also when the posts end on a whole batch (the last read finds none):
/// 2,000 posts are two whole batches of the documents' reads.
#[tokio::test]
async fn a_pass_ending_on_a_whole_batch_commits_every_post_and_the_mark() {
    use moments::store::{AccountDocs, DocStore, PostDoc, PostDocs, UserDoc};

    let dir = folder();
    let db = moments::store::embedded::open(&dir.join("docs"), 1 << 20).unwrap();
    let docs = moments::store::embedded::documents::EmbeddedDocs::new(db, 100);
    docs.apply_schemas().await.unwrap();
    // Made a day ago: long settled, so the mark goes through them.
    let day_ago = moments::ids::first_id_at(moments::ids::now_ms() - 86_400_000);
    let uid = day_ago + 1;
    docs.insert_user(&UserDoc::new(uid, "indexed", String::new(), 1))
        .await
        .unwrap();
    let ids: Vec<i64> = (0..2_000).map(|i| day_ago + 2 + i).collect();
    for id in &ids {
        docs.insert_post(&PostDoc::text(*id, uid, "kites over the lake", 2))
            .await
            .unwrap();
    }
    let index = open(&dir.join("index"));
    let read = moments::service::search::rebuild(&docs, index.as_ref(), &|_| {})
        .await
        .unwrap();
    assert_eq!(read, 2_000);
    assert_eq!(index.indexed_through().await.unwrap(), ids.last().copied());
    let found = index
        .search_posts(&PostSearch {
            circle: vec![uid],
            limit: 5_000,
            ..asking("kite")
        })
        .await
        .unwrap();
    assert_eq!(found.len(), 2_000);
    drop(index);
    docs.close().await.unwrap();
    let _ = std::fs::remove_dir_all(dir);
}
