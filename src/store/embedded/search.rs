//! The embedded search index: a `tantivy` index in `MOMENTS_DATA_DIR/search`.
//! Text arrives cut already (`domain::search_text`), so the index and the
//! answers' marks cut alike; a query is built from its terms directly, no
//! query language is parsed. Commits are flushed to the disk before they
//! return (tantivy syncs its files and then its list of them), and a
//! commit carries how far indexing got in order (`indexed_through`), so
//! after a crash indexing resumes from the last commit, never past it.

use std::collections::{BinaryHeap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tantivy::columnar::Column;
use tantivy::fastfield::AliveBitSet;
use tantivy::query::{
    AllQuery, Bm25StatisticsProvider, BooleanQuery, ConstScoreQuery, EnableScoring, Occur, Query,
    TermQuery,
};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED,
};
use tantivy::tokenizer::{PreTokenizedString, Token};
use tantivy::{
    DocId, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, SegmentReader, TantivyDocument,
    Term,
};

use crate::domain::search_text::{terms, Cut, WORDS_VERSION};
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
        // Indexed to be deleted by; fast to be ordered and filtered by.
        id: b.add_i64_field("id", INDEXED | FAST),
        author: b.add_i64_field("author", INDEXED | FAST),
        // The rest only filter the words' matches, read beside each one
        // (`Reach`): as posting lists they were unions and ranges the
        // size of the index, walked for every query.
        createtime: b.add_i64_field("createtime", FAST),
        // Named with the version of the words it holds, so that an index
        // cut by other rules has another schema and is made again.
        content: b.add_text_field(&format!("words{WORDS_VERSION}"), text),
        has_media: b.add_bool_field("has_media", FAST),
        findable: b.add_bool_field("findable", FAST),
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
        let reach = Arc::new(Reach::of(search));
        let searcher = self.reader.searcher();
        let limit = search.limit;
        tokio::task::spawn_blocking(move || newest(&searcher, query.as_ref(), &reach, limit))
            .await
            .map_err(|e| StoreError::Other(e.into()))?
            .map_err(failed)
    }

    async fn search_posts_by_relevance(&self, search: &PostSearch) -> StoreResult<Vec<ScoredHit>> {
        if search.limit == 0 {
            return Ok(vec![]);
        }
        let query = self.query(search);
        let reach = Arc::new(Reach::of(&PostSearch {
            before: None,
            ..search.clone()
        }));
        let searcher = self.reader.searcher();
        let limit = search.limit;
        tokio::task::spawn_blocking(move || best(&searcher, query.as_ref(), &reach, limit))
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

impl EmbeddedSearch {
    /// The index in `dir`, created if there is none.
    pub fn open(dir: &Path) -> StoreResult<Self> {
        std::fs::create_dir_all(dir).map_err(failed)?;
        let (schema, fields) = schema();
        let directory = tantivy::directory::MmapDirectory::open(dir).map_err(failed)?;
        let index = match Index::open_or_create(directory.clone(), schema.clone()) {
            Err(tantivy::TantivyError::SchemaError(_)) => {
                Self::discard(dir)?;
                Index::open_or_create(directory, schema).map_err(failed)?
            }
            opened => opened.map_err(failed)?,
        };
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

    /// Empties `dir` of an index another version of this service made,
    /// with fields this one does not know: the index is derived from the
    /// documents, and the indexer fills a new one from the first post. The
    /// old index's writer is held meanwhile, so an index in use (by a
    /// running instance of that version) is refused, not deleted.
    fn discard(dir: &Path) -> StoreResult<()> {
        let old = Index::open_in_dir(dir).map_err(failed)?;
        let writer: IndexWriter = old
            .writer_with_num_threads(1, WRITER_BYTES)
            .map_err(failed)?;
        tracing::warn!(
            dir = %dir.display(),
            "the search index is of another version: emptied, and filled again from the posts"
        );
        for entry in std::fs::read_dir(dir).map_err(failed)? {
            let path = entry.map_err(failed)?.path();
            let is_lock = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".lock"));
            if path.is_file() && !is_lock {
                std::fs::remove_file(&path).map_err(failed)?;
            }
        }
        drop(writer);
        Ok(())
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

    /// What the words and the author ask: the posting lists a match is
    /// found by. Everything else a search asks is `Reach`'s to judge.
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
        if let Some(author) = s.from {
            // Scores nothing: a match ranks by its words alone.
            must.push((
                Occur::Must,
                Box::new(ConstScoreQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_i64(f.author, author),
                        IndexRecordOption::Basic,
                    )),
                    0.0,
                )),
            ));
        }
        if must.is_empty() {
            return Box::new(AllQuery);
        }
        Box::new(BooleanQuery::new(must))
    }
}

/// What a search asks of a match beyond its words, judged from the fast
/// fields beside each match (a hash lookup and a few column reads), so a
/// query's cost follows the posts holding its words, not the size of the
/// circle's or the findable posts' lists.
struct Reach {
    /// Authors whose posts are searched whether or not findable.
    circle: HashSet<i64>,
    before: Option<i64>,
    since: Option<i64>,
    until: Option<i64>,
    has_media: bool,
}

impl Reach {
    fn of(s: &PostSearch) -> Self {
        Self {
            circle: s.circle.iter().copied().collect(),
            before: s.before,
            since: s.since,
            until: s.until,
            has_media: s.has_media,
        }
    }

    fn in_segment(self: &Arc<Self>, segment: &SegmentReader) -> tantivy::Result<SegmentReach> {
        let fast = segment.fast_fields();
        Ok(SegmentReach {
            reach: self.clone(),
            id: fast.i64("id")?,
            author: fast.i64("author")?,
            createtime: fast.i64("createtime")?,
            findable: fast.bool("findable")?,
            has_media: fast.bool("has_media")?,
            alive: segment.alive_bitset().cloned(),
        })
    }
}

/// `Reach` over one segment's columns.
struct SegmentReach {
    reach: Arc<Reach>,
    id: Column<i64>,
    author: Column<i64>,
    createtime: Column<i64>,
    findable: Column<bool>,
    has_media: Column<bool>,
    alive: Option<AliveBitSet>,
}

impl SegmentReach {
    /// The hit `doc` is, if it is one the search reaches.
    fn hit(&self, doc: DocId) -> Option<SearchHit> {
        let r = &self.reach;
        if self.alive.as_ref().is_some_and(|a| a.is_deleted(doc)) {
            return None;
        }
        let id = self.id.first(doc)?;
        if r.before.is_some_and(|b| id >= b) {
            return None;
        }
        let author = self.author.first(doc)?;
        let reached = self.findable.first(doc) == Some(true) || r.circle.contains(&author);
        if !reached || (r.has_media && self.has_media.first(doc) != Some(true)) {
            return None;
        }
        if r.since.is_some() || r.until.is_some() {
            let at = self.createtime.first(doc)?;
            if r.since.is_some_and(|s| at < s) || r.until.is_some_and(|u| at >= u) {
                return None;
            }
        }
        Some(SearchHit { id, author })
    }
}

/// The `limit` newest posts `query` matches that `reach` reaches. Segments
/// are read newest first (by the highest id each holds), and the search
/// stops at the first whose highest id is below the page's oldest hit:
/// a common word fills its page from the recent, small segments and never
/// reads the large old ones.
fn newest(
    searcher: &Searcher,
    query: &dyn Query,
    reach: &Arc<Reach>,
    limit: usize,
) -> tantivy::Result<Vec<SearchHit>> {
    let weight = query.weight(EnableScoring::disabled_from_searcher(searcher))?;
    let mut segments = Vec::new();
    for segment in searcher.segment_readers() {
        if segment.num_docs() == 0 {
            continue;
        }
        let ids = segment.fast_fields().i64("id")?;
        let (lowest, highest) = (ids.min_value(), ids.max_value());
        if reach.before.is_some_and(|b| lowest >= b) {
            continue;
        }
        segments.push((highest, segment));
    }
    segments.sort_unstable_by_key(|(highest, _)| std::cmp::Reverse(*highest));
    // The page so far, oldest on top: a min-heap of at most `limit`.
    let mut page: BinaryHeap<std::cmp::Reverse<(i64, i64)>> = BinaryHeap::with_capacity(limit + 1);
    for (highest, segment) in segments {
        if page.len() == limit && page.peek().is_some_and(|o| o.0 .0 >= highest) {
            break;
        }
        let judge = reach.in_segment(segment)?;
        weight.for_each_no_score(segment, &mut |docs| {
            for doc in docs {
                // Cheaper than the whole judgement: a post older than a
                // full page's oldest cannot enter it.
                if page.len() == limit {
                    let oldest = page.peek().map_or(i64::MIN, |o| o.0 .0);
                    if judge.id.first(*doc).is_none_or(|id| id <= oldest) {
                        continue;
                    }
                }
                if let Some(hit) = judge.hit(*doc) {
                    page.push(std::cmp::Reverse((hit.id, hit.author)));
                    if page.len() > limit {
                        page.pop();
                    }
                }
            }
        })?;
    }
    let mut hits: Vec<SearchHit> = page
        .into_iter()
        .map(|std::cmp::Reverse((id, author))| SearchHit { id, author })
        .collect();
    hits.sort_unstable_by_key(|h| std::cmp::Reverse(h.id));
    Ok(hits)
}

/// The `limit` best matches of `query` that `reach` reaches, best first and
/// of equal scores the newest first. Every match is scored: the index's
/// block-max skipping (WAND) would be wrong here, since each block's best
/// (length, frequency) pair is chosen when a segment is written, with
/// that segment's own average length, and under the fixed statistics
/// (`OwnTextOnly`) another pair of the block can score higher, so a block
/// holding a post of the page could be skipped.
fn best(
    searcher: &Searcher,
    query: &dyn Query,
    reach: &Arc<Reach>,
    limit: usize,
) -> tantivy::Result<Vec<ScoredHit>> {
    let weight = query.weight(EnableScoring::enabled_from_statistics_provider(
        &OwnTextOnly,
        searcher,
    ))?;
    // Scores are finite and not negative, so their bits order as they do.
    type Ranked = (u32, i64, i64);
    let mut page: BinaryHeap<std::cmp::Reverse<Ranked>> = BinaryHeap::with_capacity(limit + 1);
    for segment in searcher.segment_readers() {
        let judge = reach.in_segment(segment)?;
        weight.for_each(segment, &mut |doc, score| {
            let worst = match page.peek() {
                Some(w) if page.len() == limit => Some(w.0),
                _ => None,
            };
            // Below a full page's worst score, no need to judge it.
            let bits = score.max(0.0).to_bits();
            if worst.is_some_and(|w| bits < w.0) {
                return;
            }
            if let Some(hit) = judge.hit(doc) {
                let ranked = (bits, hit.id, hit.author);
                if worst.is_none_or(|w| ranked > w) {
                    page.push(std::cmp::Reverse(ranked));
                    if page.len() > limit {
                        page.pop();
                    }
                }
            }
        })?;
    }
    let mut ranked: Vec<Ranked> = page.into_iter().map(|r| r.0).collect();
    ranked.sort_unstable_by(|a, b| b.cmp(a));
    Ok(ranked
        .into_iter()
        .map(|(bits, id, author)| ScoredHit {
            hit: SearchHit { id, author },
            score: f32::from_bits(bits),
        })
        .collect())
}
