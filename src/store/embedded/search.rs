//! The embedded search index: a `tantivy` index in `MOMENTS_DATA_DIR/search`.
//! Text arrives cut already (`domain::search_text`), so the index and the
//! answers' marks cut alike; a query is built from its terms directly, no
//! query language is parsed. Commits are flushed to the disk before they
//! return (tantivy syncs its files and then its list of them), and a
//! commit carries how far indexing got in order (`indexed_through`), so
//! after a crash indexing resumes from the last commit, never past it.

use std::collections::{BinaryHeap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use tantivy::columnar::Column;
use tantivy::fastfield::AliveBitSet;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::Postings;
use tantivy::query::{
    AllQuery, Bm25StatisticsProvider, Bm25Weight, BooleanQuery, ConstScoreQuery, EnableScoring,
    Occur, Query, TermQuery, Weight,
};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED,
};
use tantivy::tokenizer::MAX_TOKEN_LEN;
use tantivy::{
    DocId, DocSet, Index, IndexReader, IndexSettings, IndexSortByField, IndexWriter, Order,
    ReloadPolicy, Score, Searcher, SegmentReader, TantivyDocument, Term, TERMINATED,
};

use crate::domain::search_text::{indexed_words, WORDS_VERSION};
use crate::store::search::{
    IndexedPost, PostSearch, ScoredHit, SearchHit, SearchIndex, RELEVANCE_WINDOW,
};
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
    strong: Field,
    has_media: Field,
    findable: Field,
}

/// What a text field's words are split by when a document is indexed.
/// A post's text is cut before it reaches the index, its terms joined by
/// spaces (`indexed_words`), which never hold one, so tantivy's split
/// gives the terms back as cut. Handed over as tokens (`PreTokenizedString`), they would cross
/// tantivy's document as JSON, written and parsed again for every post:
/// a tenth of the indexing work, measured.
const SPLIT_AT_SPACES: &str = "whitespace";

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    // Frequencies for ranking by relevance; no positions: a search holds
    // every word, not a phrase, and positions would double the index.
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(SPLIT_AT_SPACES)
            .set_index_option(IndexRecordOption::WithFreqs),
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
        // A post's words that score at least `strong_score()` in it, each as often
        // as the post says it (`strong_words`): where a common word's best
        // matches are looked for first. No lengths of its own: scores take
        // the post's from `content`.
        strong: b.add_text_field(
            "strong",
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer(SPLIT_AT_SPACES)
                    .set_index_option(IndexRecordOption::WithFreqs)
                    .set_fieldnorms(false),
            ),
        ),
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
    /// Posts removed.
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

/// Each segment keeps its posts newest first (by id, through merges too),
/// so a walk of a segment's matches meets them in that order and can stop
/// at the first that is older than what a search still wants.
fn settings() -> IndexSettings {
    IndexSettings {
        sort_by_field: Some(IndexSortByField {
            field: "id".into(),
            order: Order::Desc,
        }),
        ..IndexSettings::default()
    }
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

    /// Every word's weight: the same, since every word's counts are.
    /// Made once: it is a table of 256 scores, and every post indexed
    /// asks it (`strong_words`).
    fn weight() -> &'static Bm25Weight {
        static WEIGHT: OnceLock<Bm25Weight> = OnceLock::new();
        WEIGHT.get_or_init(|| {
            Bm25Weight::for_one_term(Self::DOC_FREQ, Self::DOCS, Self::AVERAGE_TERMS as Score)
        })
    }
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

/// The score from which a word's match is strong: a word said twice in a
/// post of twelve words, once in a post of two, three times in one of 22.
/// A word said once is strong only in a post of one or two words, so a
/// common word's strong matches are a small part of all its matches, and
/// its best ones.
fn strong_score() -> Score {
    static STRONG: OnceLock<Score> = OnceLock::new();
    *STRONG.get_or_init(|| OwnTextOnly::weight().score(FieldNormReader::fieldnorm_to_id(12), 2))
}

/// Of a post's `words` (`indexed_words`: its terms, each followed by a
/// space), those whose match scores at least `strong_score()`, each
/// repeated as often as the post says it, so the tier's frequencies are
/// the post's own; spaced as `words` are. Counted by sorting, not
/// hashing: a post is a few dozen words.
fn strong_words(words: &str) -> String {
    let mut sorted: Vec<&str> = words.split_terminator(' ').collect();
    // The length the index gives the post: the words it keeps (tantivy
    // drops, uncounted, a word longer than `MAX_TOKEN_LEN`).
    let length = sorted.iter().filter(|w| w.len() <= MAX_TOKEN_LEN).count();
    let length = FieldNormReader::fieldnorm_to_id(u32::try_from(length).unwrap_or(u32::MAX));
    sorted.sort_unstable();
    let weight = OwnTextOnly::weight();
    let strong = strong_score();
    let mut out = String::new();
    for same in sorted.chunk_by(|a, b| a == b) {
        let times = u32::try_from(same.len()).unwrap_or(u32::MAX);
        if weight.score(length, times) >= strong {
            for w in same {
                out.push_str(w);
                out.push(' ');
            }
        }
    }
    out
}

pub struct EmbeddedSearch {
    fields: Fields,
    index: Index,
    /// One writer per index (tantivy's rule); held while a batch is added
    /// and committed.
    writer: Arc<Mutex<Writer>>,
    reader: IndexReader,
}

struct Writer {
    writer: IndexWriter,
    /// An id at least as high as any the committed index holds (None: it
    /// holds none). A post above it is not in the index, so adding it
    /// replaces nothing and skips the delete by id, which looks the id up
    /// in every segment: the indexer's new posts nearly all are.
    highest_held: Option<i64>,
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
        let search = PostSearch {
            before: None,
            ..search.clone()
        };
        let query = self.query(&search);
        let reach = Arc::new(Reach::of(&search));
        let searcher = self.reader.searcher();
        let fields = self.fields;
        tokio::task::spawn_blocking(move || {
            best(&searcher, fields, query.as_ref(), &search, &reach)
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

impl EmbeddedSearch {
    /// The index in `dir`, created if there is none.
    pub fn open(dir: &Path) -> StoreResult<Self> {
        std::fs::create_dir_all(dir).map_err(failed)?;
        let (schema, fields) = schema();
        let directory = tantivy::directory::MmapDirectory::open(dir).map_err(failed)?;
        let settings = settings();
        let open = || {
            Index::builder()
                .schema(schema.clone())
                .settings(settings.clone())
                .open_or_create(directory.clone())
        };
        let index = match open() {
            Err(tantivy::TantivyError::SchemaError(_)) => {
                Self::discard(dir)?;
                open().map_err(failed)?
            }
            // Made before its posts were kept newest first: an order
            // `newest_matches` stops early by.
            Ok(index) if index.settings().sort_by_field != settings.sort_by_field => {
                drop(index);
                Self::discard(dir)?;
                open().map_err(failed)?
            }
            opened => opened.map_err(failed)?,
        };
        let writer = index
            .writer_with_num_threads(1, WRITER_BYTES)
            .map_err(failed)?;
        // Reloaded by hand after each commit, so a post indexed is found by
        // the next search, not some time later.
        let reader: IndexReader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(failed)?;
        let mut highest_held = None;
        for segment in reader.searcher().segment_readers() {
            if segment.max_doc() > 0 {
                let ids = segment.fast_fields().i64("id").map_err(failed)?;
                highest_held = highest_held.max(Some(ids.max_value()));
            }
        }
        Ok(Self {
            fields,
            index,
            writer: Arc::new(Mutex::new(Writer {
                writer,
                highest_held,
            })),
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
        let words = indexed_words(&post.content);
        let strong = strong_words(&words);
        if !strong.is_empty() {
            doc.add_text(f.strong, strong);
        }
        // Not stored: the documents hold the text.
        doc.add_text(f.content, words);
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
            let mut state = writer.lock().unwrap_or_else(|p| p.into_inner());
            let held_before = match edit.everything {
                true => None,
                false => state.highest_held,
            };
            let highest_held = edit.posts.iter().map(|p| p.id).max().max(held_before);
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
                // Each post replaces what the index held of it.
                for post in &edit.posts {
                    if held_before.is_some_and(|h| post.id <= h) {
                        writer.delete_term(Term::from_field_i64(f.id, post.id));
                    }
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
            if let Err(e) = run(&mut state.writer) {
                // What the index held before is what it holds again, so
                // the bound it had still bounds it.
                let _ = state.writer.rollback();
                return Err(failed(e));
            }
            state.highest_held = highest_held;
            reader.reload().map_err(failed)
        })
        .await
        .map_err(|e| StoreError::Other(e.into()))?
    }

    /// Adds `posts` (replacing what the index held of them), with `mark`.
    async fn add(&self, posts: &[IndexedPost], mark: Mark) -> StoreResult<()> {
        self.change(Edit {
            posts: posts.to_vec(),
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

/// The `limit` newest posts `query` matches that `reach` reaches
/// (`newest_matches`, unscored).
fn newest(
    searcher: &Searcher,
    query: &dyn Query,
    reach: &Arc<Reach>,
    limit: usize,
) -> tantivy::Result<Vec<SearchHit>> {
    let weight = query.weight(EnableScoring::disabled_from_searcher(searcher))?;
    let mut hits = newest_matches(searcher, weight.as_ref(), reach, limit, false)?;
    hits.sort_unstable_by_key(|(hit, _)| std::cmp::Reverse(hit.id));
    Ok(hits.into_iter().map(|(hit, _)| hit).collect())
}

/// The `search.limit` best matches of `query` (`search`'s words and
/// author) that `reach` reaches, best first and of equal scores the
/// newest first. A post's score is BM25 under the fixed statistics
/// (`OwnTextOnly`), each word's summed.
///
/// A search of one word looks among its strong matches first (the
/// `strong` field: a small part of a common word's), and is done
/// there if they fill the page down to a score of at least `strong_score()`:
/// every other match scores below it, so none could enter. Otherwise, and
/// for more words (whose sums a tier of single words does not bound), the
/// newest `search.window` matches it reaches are scored and ranked
/// (`newest_matches`): scoring every match cost, for two middling words over a
/// million posts, over three times the budget of a query (BENCHMARKS.md).
/// The index's own block-max skipping (WAND) is not used: each block's
/// best match is chosen with the segment's own
/// average length, wrong under the fixed one; and a bound corrected for
/// that skipped almost nothing here, since a common word's page is full
/// of equal scores, which a block holding one cannot be skipped past.
fn best(
    searcher: &Searcher,
    f: Fields,
    query: &dyn Query,
    search: &PostSearch,
    reach: &Arc<Reach>,
) -> tantivy::Result<Vec<ScoredHit>> {
    if let ([word], None) = (search.terms.as_slice(), search.from) {
        let mut page = Ranking::new(search.limit);
        let fixed = OwnTextOnly::weight();
        let term = Term::from_field_text(f.strong, word);
        for segment in searcher.segment_readers() {
            let Some(mut matches) = segment
                .inverted_index(f.strong)?
                .read_postings(&term, IndexRecordOption::WithFreqs)?
            else {
                continue;
            };
            let lengths = segment.get_fieldnorms_reader(f.content)?;
            let judge = reach.in_segment(segment)?;
            let mut doc = matches.doc();
            while doc != TERMINATED {
                let score = fixed.score(lengths.fieldnorm_id(doc), matches.term_freq());
                page.offer(&judge, doc, score);
                doc = matches.advance();
            }
        }
        if page.worst().is_some_and(|w| w >= strong_score()) {
            return Ok(page.into_best());
        }
    }
    let weight = query.weight(EnableScoring::enabled_from_statistics_provider(
        &OwnTextOnly,
        searcher,
    ))?;
    let size = search.window.unwrap_or(RELEVANCE_WINDOW);
    let window = newest_matches(searcher, weight.as_ref(), reach, size, true)?;
    Ok(best_of(
        window
            .into_iter()
            .map(|(hit, bits)| (bits, hit.id, hit.author))
            .collect(),
        search.limit,
    ))
}

/// The newest `size` matches of `weight` that `reach` reaches, in no
/// order, each with its score's bits if `scored` (0 if not). Segments are
/// read newest first (by the highest id each holds), and the walk stops at
/// the first whose highest id is not above the oldest of `size` found so
/// far: a common word is answered from the recent, small segments and
/// never reads the large old ones. Within a segment, whose posts are
/// newest first (`settings`), the walk ends at the first match no newer
/// than that line; segments whose ids overlap (a post indexed again lands
/// in a new one) are each read down to it.
fn newest_matches(
    searcher: &Searcher,
    weight: &dyn Weight,
    reach: &Arc<Reach>,
    size: usize,
    scored: bool,
) -> tantivy::Result<Vec<(SearchHit, u32)>> {
    let mut segments = Vec::new();
    for segment in searcher.segment_readers() {
        if segment.num_docs() == 0 {
            continue;
        }
        let ids = segment.fast_fields().i64("id")?;
        if reach.before.is_some_and(|b| ids.min_value() >= b) {
            continue;
        }
        segments.push((ids.max_value(), segment));
    }
    segments.sort_unstable_by_key(|(highest, _)| std::cmp::Reverse(*highest));
    // Oldest on top: a min-heap by id of at most `size`.
    let mut newest: BinaryHeap<std::cmp::Reverse<(i64, i64, u32)>> =
        BinaryHeap::with_capacity(size.min(RELEVANCE_WINDOW) + 1);
    let line = |newest: &BinaryHeap<std::cmp::Reverse<(i64, i64, u32)>>| {
        newest
            .peek()
            .filter(|_| newest.len() >= size)
            .map(|o| o.0 .0)
    };
    for (highest, segment) in segments {
        if line(&newest).is_some_and(|o| highest <= o) {
            break;
        }
        let judge = reach.in_segment(segment)?;
        let mut matches = weight.scorer(segment, 1.0)?;
        let mut doc = matches.doc();
        while doc != TERMINATED {
            // Cheaper than the whole judgement: a post no newer than the
            // line cannot enter, nor can any after it here.
            if let Some(o) = line(&newest) {
                if judge.id.first(doc).is_some_and(|id| id <= o) {
                    break;
                }
            }
            if let Some(hit) = judge.hit(doc) {
                let bits = if scored {
                    matches.score().max(0.0).to_bits()
                } else {
                    0
                };
                newest.push(std::cmp::Reverse((hit.id, hit.author, bits)));
                if newest.len() > size {
                    newest.pop();
                }
            }
            doc = matches.advance();
        }
    }
    Ok(newest
        .into_iter()
        .map(|std::cmp::Reverse((id, author, bits))| (SearchHit { id, author }, bits))
        .collect())
}

/// The best hits offered so far, at most `limit`: a min-heap of (score
/// bits, id, author), the worst on top. Scores are finite and not
/// negative, so their bits order as they do.
struct Ranking {
    limit: usize,
    heap: BinaryHeap<std::cmp::Reverse<(u32, i64, i64)>>,
}

impl Ranking {
    fn new(limit: usize) -> Self {
        Self {
            limit,
            heap: BinaryHeap::with_capacity(limit + 1),
        }
    }

    /// The worst ranked hit, once the page is full.
    fn worst_ranked(&self) -> Option<(u32, i64, i64)> {
        self.heap
            .peek()
            .filter(|_| self.heap.len() == self.limit)
            .map(|w| w.0)
    }

    /// The worst score, once the page is full.
    fn worst(&self) -> Option<Score> {
        self.worst_ranked().map(|w| f32::from_bits(w.0))
    }

    /// Ranks `doc` if `judge` lets it through and it beats the worst.
    fn offer(&mut self, judge: &SegmentReach, doc: DocId, score: Score) {
        let bits = score.max(0.0).to_bits();
        if let Some(worst) = self.worst_ranked() {
            // Below a full page's worst, or equal to it and older: out,
            // without the whole judgement.
            if bits < worst.0
                || (bits == worst.0 && judge.id.first(doc).is_none_or(|id| id <= worst.1))
            {
                return;
            }
        }
        if let Some(hit) = judge.hit(doc) {
            self.rank((bits, hit.id, hit.author));
        }
    }

    /// Ranks a hit the search reaches: (score bits, id, author).
    fn rank(&mut self, ranked: (u32, i64, i64)) {
        if self.worst_ranked().is_none_or(|w| ranked > w) {
            self.heap.push(std::cmp::Reverse(ranked));
            if self.heap.len() > self.limit {
                self.heap.pop();
            }
        }
    }

    /// Best first.
    fn into_best(self) -> Vec<ScoredHit> {
        best_of(self.heap.into_iter().map(|r| r.0).collect(), self.limit)
    }
}

/// The `limit` best of `ranked` (score bits, id, author), best first and
/// of equal scores the newest first: a selection, then a sort of what it
/// kept, where a heap would pay a sift for each of a window's matches.
fn best_of(mut ranked: Vec<(u32, i64, i64)>, limit: usize) -> Vec<ScoredHit> {
    if limit == 0 {
        return Vec::new();
    }
    if ranked.len() > limit {
        ranked.select_nth_unstable_by(limit - 1, |a, b| b.cmp(a));
        ranked.truncate(limit);
    }
    ranked.sort_unstable_by(|a, b| b.cmp(a));
    ranked
        .into_iter()
        .map(|(bits, id, author)| ScoredHit {
            hit: SearchHit { id, author },
            score: f32::from_bits(bits),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::domain::search_text::{terms, Cut};

    /// An index made before its posts were kept newest first holds
    /// segments in the order they were added, which the walks that stop
    /// early would misread: it is started again.
    #[test]
    fn an_index_not_kept_newest_first_is_started_again() {
        let dir = std::env::temp_dir().join(format!("moments-unsorted-{}", crate::ids::next_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let older = Index::create_in_dir(&dir, schema().0).unwrap();
        assert_eq!(older.settings().sort_by_field, None);
        drop(older);
        let index = EmbeddedSearch::open(&dir).unwrap();
        assert_eq!(
            index.index.settings().sort_by_field,
            settings().sort_by_field
        );
        assert!(index.index.settings().sort_by_field.is_some());
        drop(index);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// The index holds a post's words as `terms` cut them, each as often
    /// as the post says it, and its length as their count, whatever the
    /// spaces and scripts between them: the words reach tantivy joined by
    /// spaces and split there again (`SPLIT_AT_SPACES`).
    #[tokio::test]
    async fn the_index_holds_the_words_as_they_were_cut() {
        let dir = std::env::temp_dir().join(format!("moments-words-{}", crate::ids::next_id()));
        let index = EmbeddedSearch::open(&dir).unwrap();
        let content = "今天\u{3000}去西湖划船,\tWest\u{a0}lake 划船🚣 ﷺ ＣＡＦÉ\nwest";
        let post = IndexedPost {
            id: 7,
            author: 1,
            createtime: 0,
            content: content.into(),
            has_media: false,
            findable: true,
        };
        index.index_posts(&[post]).await.unwrap();
        let cut = terms(content, Cut::Indexing);
        let mut times: HashMap<&str, u32> = HashMap::new();
        for t in &cut {
            *times.entry(&t.text).or_default() += 1;
        }
        assert!(times.len() > 8, "{cut:?}");
        assert_eq!(times.get("划船"), Some(&2));
        assert_eq!(times.get("west"), Some(&2));
        let searcher = index.reader.searcher();
        let segment = searcher.segment_reader(0);
        let words = segment.inverted_index(index.fields.content).unwrap();
        for (word, n) in &times {
            let term = Term::from_field_text(index.fields.content, word);
            let postings = words
                .read_postings(&term, IndexRecordOption::WithFreqs)
                .unwrap()
                .unwrap_or_else(|| panic!("{word} not indexed"));
            assert_eq!(postings.doc(), 0);
            assert_eq!(postings.term_freq(), *n, "{word}");
        }
        assert_eq!(
            words.terms().num_terms(),
            times.len(),
            "only the words cut are held"
        );
        let lengths = segment.get_fieldnorms_reader(index.fields.content).unwrap();
        assert_eq!(lengths.fieldnorm(0), cut.len() as u32);
        drop(index);
        let _ = std::fs::remove_dir_all(dir);
    }

    fn post(id: i64, content: &str) -> IndexedPost {
        IndexedPost {
            id,
            author: 1,
            createtime: 0,
            content: content.into(),
            has_media: false,
            findable: true,
        }
    }

    /// Ids found for `word`, newest first.
    async fn found(index: &EmbeddedSearch, word: &str) -> Vec<i64> {
        let search = PostSearch {
            terms: vec![word.into()],
            circle: vec![1],
            limit: 10,
            ..PostSearch::default()
        };
        let hits = index.search_posts(&search).await.unwrap();
        hits.iter().map(|h| h.id).collect()
    }

    /// A post indexed again replaces what the index held of it, whether
    /// the index learnt what it holds by adding it or by opening (the
    /// deletes by id are skipped only above every id it holds), and one
    /// landing below the newest is added beside them.
    #[tokio::test]
    async fn a_post_indexed_again_replaces_itself_across_a_restart() {
        let dir = std::env::temp_dir().join(format!("moments-again-{}", crate::ids::next_id()));
        let index = EmbeddedSearch::open(&dir).unwrap();
        index
            .index_posts(&[post(10, "lake"), post(30, "lake")])
            .await
            .unwrap();
        index.index_posts(&[post(10, "lake")]).await.unwrap();
        assert_eq!(found(&index, "lake").await, vec![30, 10]);
        drop(index);
        let index = EmbeddedSearch::open(&dir).unwrap();
        index
            .index_posts(&[post(30, "river"), post(20, "lake")])
            .await
            .unwrap();
        assert_eq!(found(&index, "lake").await, vec![20, 10]);
        assert_eq!(found(&index, "river").await, vec![30]);
        index.clear().await.unwrap();
        index.index_posts(&[post(5, "lake")]).await.unwrap();
        index.index_posts(&[post(5, "lake")]).await.unwrap();
        assert_eq!(found(&index, "lake").await, vec![5]);
        drop(index);
        let _ = std::fs::remove_dir_all(dir);
    }
}
