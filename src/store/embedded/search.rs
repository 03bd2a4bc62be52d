//! The embedded search index: a `tantivy` index in `MOMENTS_DATA_DIR/search`.
//! Text arrives cut already (`domain::search_text`), so the index and the
//! answers' marks cut alike; a query is built from its terms directly, no
//! query language is parsed. Commits are flushed to the disk before they
//! return (tantivy syncs its files and then its list of them), and a
//! commit carries how far indexing got in order (`indexed_through`), so
//! after a crash indexing resumes from the last commit, never past it.

use std::ops::Bound;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tantivy::collector::sort_key::{SortBySimilarityScore, SortByStaticFastValue};
use tantivy::collector::TopDocs;
use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, ConstScoreQuery, Occur, Query, RangeQuery, TermQuery,
    TermSetQuery,
};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED,
};
use tantivy::tokenizer::{PreTokenizedString, Token};
use tantivy::{Index, IndexReader, IndexWriter, Order, ReloadPolicy, TantivyDocument, Term};

use crate::domain::search_text::{terms, Cut};
use crate::store::search::{IndexedPost, PostSearch, ScoredHit, SearchHit, SearchIndex};
use crate::store::{StoreError, StoreResult};

/// Memory the writer buffers before it writes a segment (tantivy's
/// smallest allowed is 15 MB for its one thread).
const WRITER_BYTES: usize = 32 << 20;

#[derive(Clone, Copy)]
struct Fields {
    id: Field,
    author: Field,
    createtime: Field,
    content: Field,
    has_media: Field,
    findable: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    // Frequencies for ranking by relevance; no positions: a search holds
    // every word, not a phrase, and positions would double the index.
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        id: b.add_i64_field("id", INDEXED | FAST),
        // Fast too: a hit's author is answered with it.
        author: b.add_i64_field("author", INDEXED | FAST),
        createtime: b.add_i64_field("createtime", INDEXED | FAST),
        content: b.add_text_field("content", text),
        has_media: b.add_bool_field("has_media", INDEXED),
        findable: b.add_bool_field("findable", INDEXED),
    };
    (b.build(), fields)
}

/// What one commit changes: documents added (replacing those of the same
/// ids), posts and authors removed, or everything, and the mark it keeps.
#[derive(Default)]
struct Edit {
    posts: Vec<IndexedPost>,
    ids: Vec<i64>,
    authors: Vec<i64>,
    everything: bool,
    mark: Mark,
}

/// The mark a commit leaves (`indexed_through`).
#[derive(Default)]
enum Mark {
    /// The one the index has.
    #[default]
    Keep,
    Set(i64),
    /// None: indexing starts again from the first post.
    Reset,
}

/// The statistics BM25 scores a post with: the same for every term and
/// every index, so that a post's score comes from its own text alone (how
/// often it holds the words, against its length). Scored with the
/// index's own counts, a score would tell how many posts hold a word,
/// those the reader may not read included, and would move with every
/// post indexed, under a cursor that pages by it.
struct OwnTextOnly;

impl OwnTextOnly {
    const DOCS: u64 = 1_000_000;
    /// Words a post holds on average: a short post.
    const AVERAGE_TERMS: u64 = 20;
    const DOC_FREQ: u64 = 1_000;
}

impl Bm25StatisticsProvider for OwnTextOnly {
    fn total_num_tokens(&self, _field: Field) -> tantivy::Result<u64> {
        Ok(Self::DOCS * Self::AVERAGE_TERMS)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(Self::DOCS)
    }

    fn doc_freq(&self, _term: &Term) -> tantivy::Result<u64> {
        Ok(Self::DOC_FREQ)
    }
}

pub struct EmbeddedSearch {
    fields: Fields,
    index: Index,
    /// One writer per index (tantivy's rule); held while a batch is added
    /// and committed.
    writer: Arc<Mutex<IndexWriter>>,
    reader: IndexReader,
}

fn failed(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Other(anyhow::Error::new(e))
}

impl EmbeddedSearch {
    /// The index in `dir`, created if there is none.
    pub fn open(dir: &Path) -> StoreResult<Self> {
        std::fs::create_dir_all(dir).map_err(failed)?;
        let (schema, fields) = schema();
        let directory = tantivy::directory::MmapDirectory::open(dir).map_err(failed)?;
        let index = Index::open_or_create(directory, schema).map_err(failed)?;
        let writer = index
            .writer_with_num_threads(1, WRITER_BYTES)
            .map_err(failed)?;
        // Reloaded by hand after each commit, so a post indexed is found by
        // the next search, not some time later.
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(failed)?;
        Ok(Self {
            fields,
            index,
            writer: Arc::new(Mutex::new(writer)),
            reader,
        })
    }

    /// A post as the index holds it: its text cut into terms here, which
    /// is CPU work (callers run it off the async workers).
    fn document(f: Fields, post: &IndexedPost) -> TantivyDocument {
        let mut doc = TantivyDocument::new();
        doc.add_i64(f.id, post.id);
        doc.add_i64(f.author, post.author);
        doc.add_i64(f.createtime, post.createtime);
        doc.add_bool(f.has_media, post.has_media);
        doc.add_bool(f.findable, post.findable);
        let tokens = terms(&post.content, Cut::Indexing)
            .into_iter()
            .enumerate()
            .map(|(position, t)| Token {
                offset_from: t.start,
                offset_to: t.end,
                position,
                text: t.text,
                position_length: 1,
            })
            .collect();
        doc.add_pre_tokenized_text(
            f.content,
            PreTokenizedString {
                // Not stored: the documents hold the text.
                text: String::new(),
                tokens,
            },
        );
        doc
    }

    /// Makes `edit`, then commits and makes the commit visible to
    /// searches: off the async workers, since a commit syncs files.
    async fn change(&self, edit: Edit) -> StoreResult<()> {
        let writer = self.writer.clone();
        let reader = self.reader.clone();
        let index = self.index.clone();
        let f = self.fields;
        tokio::task::spawn_blocking(move || -> StoreResult<()> {
            // A panic in another batch leaves nothing half-committed (an
            // uncommitted batch is rolled back below), so its poison does
            // not stop indexing.
            let mut writer = writer.lock().unwrap_or_else(|p| p.into_inner());
            let run = |writer: &mut IndexWriter| -> tantivy::Result<()> {
                if edit.everything {
                    writer.delete_all_documents()?;
                }
                for id in &edit.ids {
                    writer.delete_term(Term::from_field_i64(f.id, *id));
                }
                for author in &edit.authors {
                    writer.delete_term(Term::from_field_i64(f.author, *author));
                }
                for post in &edit.posts {
                    writer.add_document(Self::document(f, post))?;
                }
                // A commit without a payload would leave none (tantivy keeps
                // only the last commit's), and the indexer would start over
                // from the first post: a commit that moves no mark carries
                // the one it found, read under the writer's lock.
                let payload = match edit.mark {
                    Mark::Set(mark) => Some(mark.to_string()),
                    Mark::Keep => index.load_metas()?.payload,
                    Mark::Reset => Some(String::new()),
                };
                let mut commit = writer.prepare_commit()?;
                if let Some(payload) = payload {
                    commit.set_payload(&payload);
                }
                commit.commit()?;
                Ok(())
            };
            if let Err(e) = run(&mut writer) {
                let _ = writer.rollback();
                return Err(failed(e));
            }
            reader.reload().map_err(failed)
        })
        .await
        .map_err(|e| StoreError::Other(e.into()))?
    }

    /// Adds `posts` (replacing what the index held of them), with `mark`.
    async fn add(&self, posts: &[IndexedPost], mark: Mark) -> StoreResult<()> {
        self.change(Edit {
            posts: posts.to_vec(),
            ids: posts.iter().map(|p| p.id).collect(),
            mark,
            ..Edit::default()
        })
        .await
    }

    fn query(&self, s: &PostSearch) -> Box<dyn Query> {
        let f = self.fields;
        let mut must: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for term in &s.terms {
            must.push((
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_text(f.content, term),
                    IndexRecordOption::WithFreqs,
                )),
            ));
        }
        // Filters score nothing: a match ranks by its words alone.
        let filter = |q: Box<dyn Query>| -> (Occur, Box<dyn Query>) {
            (Occur::Must, Box::new(ConstScoreQuery::new(q, 0.0)))
        };
        // The circle's posts, or any findable one.
        let circle = TermSetQuery::new(s.circle.iter().map(|a| Term::from_field_i64(f.author, *a)));
        let findable = TermQuery::new(
            Term::from_field_bool(f.findable, true),
            IndexRecordOption::Basic,
        );
        must.push(filter(Box::new(BooleanQuery::union(vec![
            Box::new(circle),
            Box::new(findable),
        ]))));
        if let Some(author) = s.from {
            must.push(filter(Box::new(TermQuery::new(
                Term::from_field_i64(f.author, author),
                IndexRecordOption::Basic,
            ))));
        }
        if s.has_media {
            must.push(filter(Box::new(TermQuery::new(
                Term::from_field_bool(f.has_media, true),
                IndexRecordOption::Basic,
            ))));
        }
        if s.since.is_some() || s.until.is_some() {
            let at = |ms: i64| Term::from_field_i64(f.createtime, ms);
            must.push(filter(Box::new(RangeQuery::new(
                s.since
                    .map_or(Bound::Unbounded, |ms| Bound::Included(at(ms))),
                s.until
                    .map_or(Bound::Unbounded, |ms| Bound::Excluded(at(ms))),
            ))));
        }
        if let Some(before) = s.before {
            must.push(filter(Box::new(RangeQuery::new(
                Bound::Unbounded,
                Bound::Excluded(Term::from_field_i64(f.id, before)),
            ))));
        }
        Box::new(BooleanQuery::new(must))
    }
}

#[async_trait]
impl SearchIndex for EmbeddedSearch {
    async fn index_posts(&self, posts: &[IndexedPost]) -> StoreResult<()> {
        self.add(posts, Mark::Keep).await
    }

    async fn remove_posts(&self, ids: &[i64]) -> StoreResult<()> {
        self.change(Edit {
            ids: ids.to_vec(),
            ..Edit::default()
        })
        .await
    }

    async fn remove_authors(&self, uids: &[i64]) -> StoreResult<()> {
        self.change(Edit {
            authors: uids.to_vec(),
            ..Edit::default()
        })
        .await
    }

    async fn clear(&self) -> StoreResult<()> {
        self.change(Edit {
            everything: true,
            mark: Mark::Reset,
            ..Edit::default()
        })
        .await
    }

    async fn search_posts(&self, search: &PostSearch) -> StoreResult<Vec<SearchHit>> {
        if search.limit == 0 {
            return Ok(vec![]);
        }
        let query = self.query(search);
        let searcher = self.reader.searcher();
        let limit = search.limit;
        tokio::task::spawn_blocking(move || -> tantivy::Result<Vec<SearchHit>> {
            let top = searcher.search(
                &query,
                &TopDocs::with_limit(limit).order_by_fast_field::<i64>("id", Order::Desc),
            )?;
            let mut hits = Vec::with_capacity(top.len());
            for (id, at) in top {
                let authors = searcher
                    .segment_reader(at.segment_ord)
                    .fast_fields()
                    .i64("author")?;
                if let (Some(id), Some(author)) = (id, authors.first(at.doc_id)) {
                    hits.push(SearchHit { id, author });
                }
            }
            Ok(hits)
        })
        .await
        .map_err(|e| StoreError::Other(e.into()))?
        .map_err(failed)
    }

    async fn search_posts_by_relevance(&self, search: &PostSearch) -> StoreResult<Vec<ScoredHit>> {
        if search.limit == 0 {
            return Ok(vec![]);
        }
        let query = self.query(&PostSearch {
            before: None,
            ..search.clone()
        });
        let searcher = self.reader.searcher();
        let limit = search.limit;
        tokio::task::spawn_blocking(move || -> tantivy::Result<Vec<ScoredHit>> {
            // Best first, and of equal scores the newest, in the collector
            // itself: the cut at `limit` keeps the newest of a tie.
            let order = (
                (SortBySimilarityScore, Order::Desc),
                (SortByStaticFastValue::<i64>::for_field("id"), Order::Desc),
            );
            let top = searcher.search_with_statistics_provider(
                &query,
                &TopDocs::with_limit(limit).order_by(order),
                &OwnTextOnly,
            )?;
            let mut hits = Vec::with_capacity(top.len());
            for ((score, id), at) in top {
                let authors = searcher
                    .segment_reader(at.segment_ord)
                    .fast_fields()
                    .i64("author")?;
                if let (Some(id), Some(author)) = (id, authors.first(at.doc_id)) {
                    hits.push(ScoredHit {
                        hit: SearchHit { id, author },
                        score,
                    });
                }
            }
            Ok(hits)
        })
        .await
        .map_err(|e| StoreError::Other(e.into()))?
        .map_err(failed)
    }

    async fn indexed_through(&self) -> StoreResult<Option<i64>> {
        let metas = self.index.load_metas().map_err(failed)?;
        Ok(metas.payload.and_then(|p| p.parse().ok()))
    }

    async fn index_posts_through(&self, posts: &[IndexedPost], mark: i64) -> StoreResult<()> {
        self.add(posts, Mark::Set(mark)).await
    }
}
