//! The search index on OpenSearch, the engine at scale: one index that
//! every instance writes and reads over HTTP (`MOMENTS_OPENSEARCH_URL`).
//!
//! Text arrives cut already (`domain::search_text`) and is sent as its
//! folded words joined by spaces, analysed by whitespace alone: Chinese
//! needs no analyser plugin, and both engines find a post by the same
//! words. Ranking by relevance uses a scripted BM25 with fixed statistics
//! (the embedded index's `OwnTextOnly`), for the same reason: a score from
//! the engine's own counts would tell how many posts hold a word. That
//! needs the `lang-painless` module, which every OpenSearch distribution
//! carries.
//!
//! How far indexing got (`indexed_through`) is a document of a second
//! index beside it, written after the posts it covers: after a crash
//! between the two, the posts are indexed again, never skipped.
//!
//! The engine down: every call answers `StoreError::Unavailable` (a search
//! answers 503), and the indexer, which reads the posts from the
//! documents, catches up when it is back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::domain::search_text::{indexed_words, WORDS_VERSION};
use crate::store::search::{IndexedPost, PostSearch, ScoredHit, SearchHit, SearchIndex};
use crate::store::{StoreError, StoreResult};

/// How long one call may take before the engine counts as unavailable.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The most one bulk request carries: well under the 10 MB a managed
/// cluster or a proxy in front may take, however long the posts.
const BULK_BYTES: usize = 4 << 20;
/// Authors in one `terms` clause of the circle.
const CIRCLE_TERMS: usize = 10_000;

/// BM25 over the post's own text: tf against the post's length, with the
/// fixed statistics of the embedded index (a million posts of 20 words, a
/// thousand holding the word), so that both engines rank alike.
const OWN_TEXT_BM25: &str = "double k1 = 1.2; double b = 0.75; \
     double idf = Math.log(1.0 + (1000000.0 - 1000.0 + 0.5) / (1000.0 + 0.5)); \
     double tf = doc.freq; \
     return query.boost * idf * (k1 + 1.0) * tf / (tf + k1 * (1.0 - b + b * doc.length / 20.0));";

pub struct OpenSearchIndex {
    http: reqwest::Client,
    /// The engine's URL, without a trailing `/`.
    base: String,
    /// The posts' index.
    index: String,
    /// Whether the indexes are known to exist (created here or found).
    ready: AtomicBool,
}

fn unavailable(e: impl Into<anyhow::Error>) -> StoreError {
    StoreError::Unavailable(e.into())
}

impl OpenSearchIndex {
    /// The engine at `url`, its posts in `index`. Nothing is asked of it
    /// yet: an instance starts while the engine is down, and its searches
    /// answer 503 until it is up.
    pub fn new(url: &str, index: &str) -> StoreResult<Self> {
        let http = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| StoreError::Other(e.into()))?;
        Ok(Self {
            http,
            base: url.trim_end_matches('/').to_string(),
            index: index.to_string(),
            ready: AtomicBool::new(false),
        })
    }

    fn mark_index(&self) -> String {
        format!("{}-mark", self.index)
    }

    /// Sends a request and reads its JSON answer: refused connections,
    /// timeouts, 429 and 5xx are `Unavailable`; another status is an error
    /// naming what the engine said.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Body>,
    ) -> StoreResult<(reqwest::StatusCode, Value)> {
        let mut request = self.http.request(method, format!("{}/{path}", self.base));
        request = match body {
            Some(Body::Json(v)) => request.json(&v),
            Some(Body::Lines(text)) => request
                .header("content-type", "application/x-ndjson")
                .body(text),
            None => request,
        };
        let response = request.send().await.map_err(unavailable)?;
        let status = response.status();
        let text = response.text().await.map_err(unavailable)?;
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            return Err(unavailable(anyhow::anyhow!(
                "OpenSearch answered {status} to {}: {}",
                route(path),
                summary(&value)
            )));
        }
        // Deleted under this instance (a rebuild elsewhere): made again at
        // the next call, unavailable meanwhile.
        if value["error"]["type"] == "index_not_found_exception"
            && self.ready.load(Ordering::Acquire)
        {
            self.ready.store(false, Ordering::Release);
            return Err(unavailable(anyhow::anyhow!(
                "the OpenSearch index {} is gone; it is made again",
                self.index
            )));
        }
        Ok((status, value))
    }

    /// `call`, where only a 2xx is an answer.
    async fn ok(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Body>,
    ) -> StoreResult<Value> {
        let (status, value) = self.call(method, path, body).await?;
        if !status.is_success() {
            return Err(StoreError::Other(anyhow::anyhow!(
                "OpenSearch answered {status} to {}: {}",
                route(path),
                summary(&value)
            )));
        }
        Ok(value)
    }

    /// Creates the two indexes unless they exist; once per process, and
    /// again after `clear`.
    async fn ensure(&self) -> StoreResult<()> {
        if self.ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let posts = json!({
            "settings": {
                "analysis": {
                    // Words are cut already; a long one is kept whole, as
                    // the embedded index keeps it (the default cuts at 255).
                    "tokenizer": {"spaces": {"type": "whitespace", "max_token_length": 16384}},
                    "analyzer": {"words": {"type": "custom", "tokenizer": "spaces"}}
                },
                "similarity": {"own_text": {"type": "scripted", "script": {"source": OWN_TEXT_BM25}}}
            },
            "mappings": {
                "dynamic": "strict",
                "_meta": {"words_version": WORDS_VERSION},
                "properties": {
                    "id": {"type": "long"},
                    "author": {"type": "long"},
                    "createtime": {"type": "long"},
                    "words": {"type": "text", "analyzer": "words", "index_options": "freqs",
                              "similarity": "own_text"},
                    "has_media": {"type": "boolean"},
                    "findable": {"type": "boolean"}
                }
            }
        });
        let mark = json!({
            "mappings": {"dynamic": "strict", "properties": {"through": {"type": "long"}}}
        });
        for (name, body) in [(self.index.clone(), posts), (self.mark_index(), mark)] {
            let (status, answer) = self
                .call(reqwest::Method::PUT, &name, Some(Body::Json(body)))
                .await?;
            let exists = answer["error"]["type"] == "resource_already_exists_exception";
            if !status.is_success() && !exists {
                return Err(StoreError::Other(anyhow::anyhow!(
                    "OpenSearch refused to create the index {name}: {}",
                    summary(&answer)
                )));
            }
        }
        self.check_mapping().await?;
        self.ready.store(true, Ordering::Release);
        Ok(())
    }

    /// Refuses an index of the posts' name made otherwise (by hand, or by
    /// a cluster that creates indexes on a first write, with its own
    /// analyser and scoring): its words would not be ours and its scores
    /// would count posts. Searches answer 503 until it is rebuilt.
    async fn check_mapping(&self) -> StoreResult<()> {
        let answer = self
            .ok(
                reqwest::Method::GET,
                &format!("{}/_mapping", self.index),
                None,
            )
            .await?;
        let mappings = answer
            .as_object()
            .and_then(|indexes| indexes.values().next())
            .map(|i| i["mappings"].clone())
            .unwrap_or(Value::Null);
        let words = &mappings["properties"]["words"];
        if words["analyzer"] != "words" || words["similarity"] != "own_text" {
            return Err(unavailable(anyhow::anyhow!(
                "the OpenSearch index {} exists with another mapping; delete it (or run \
                 moments rebuild-search, the instances stopped)",
                self.index
            )));
        }
        // Words an earlier version cut otherwise: queries would miss the
        // posts it holds. Not rebuilt here: instances of that version may
        // still be writing to it.
        if mappings["_meta"]["words_version"] != WORDS_VERSION {
            return Err(unavailable(anyhow::anyhow!(
                "the OpenSearch index {} holds words cut by another version of moments; \
                 run moments rebuild-search with the instances stopped",
                self.index
            )));
        }
        Ok(())
    }

    /// Sends bulk `lines` (one action, or an action and its document,
    /// each entry) in requests of at most `BULK_BYTES`, each made visible
    /// to searches before it returns, and checks that every operation was
    /// done: a delete of what is not there is done.
    async fn bulk(&self, entries: Vec<String>) -> StoreResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        self.ensure().await?;
        let mut chunk = String::new();
        let mut operations = 0;
        for entry in entries {
            if !chunk.is_empty() && chunk.len() + entry.len() > BULK_BYTES {
                self.send_bulk(std::mem::take(&mut chunk), operations)
                    .await?;
                operations = 0;
            }
            chunk.push_str(&entry);
            operations += 1;
        }
        self.send_bulk(chunk, operations).await
    }

    async fn send_bulk(&self, lines: String, operations: usize) -> StoreResult<()> {
        let answer = self
            .ok(
                reqwest::Method::POST,
                "_bulk?refresh=wait_for",
                Some(Body::Lines(lines)),
            )
            .await?;
        let items = answer["items"].as_array().cloned().unwrap_or_default();
        if items.len() != operations {
            return Err(StoreError::Other(anyhow::anyhow!(
                "OpenSearch answered a bulk of {operations} operations with {} results",
                items.len()
            )));
        }
        let failed: Vec<&Value> = items
            .iter()
            .filter_map(|item| item.as_object()?.values().next())
            .filter(|op| {
                let status = op["status"].as_u64().unwrap_or(0);
                let done =
                    (200..300).contains(&status) || (status == 404 && op["result"] == "not_found");
                !done
            })
            .collect();
        if let Some(first) = failed.first() {
            let overloaded = failed.iter().any(|op| op["status"] == 429);
            let e = anyhow::anyhow!(
                "OpenSearch refused {} of a bulk's {operations} operations: {}",
                failed.len(),
                summary(first)
            );
            return Err(if overloaded {
                unavailable(e)
            } else {
                StoreError::Other(e)
            });
        }
        Ok(())
    }

    fn document(post: &IndexedPost) -> Value {
        json!({
            "id": post.id,
            "author": post.author,
            "createtime": post.createtime,
            "words": indexed_words(&post.content),
            "has_media": post.has_media,
            "findable": post.findable,
        })
    }

    /// What `search` asks, as a query: its words scored, everything else
    /// a filter that scores nothing.
    fn query(s: &PostSearch, with_cursor: bool) -> Value {
        let must: Vec<Value> = s
            .terms
            .iter()
            .map(|t| json!({"term": {"words": t}}))
            .collect();
        // The circle in parts, each well under the engine's bound on the
        // terms of one query (65,536 by default).
        let mut reach: Vec<Value> = s
            .circle
            .chunks(CIRCLE_TERMS)
            .map(|part| json!({"terms": {"author": part}}))
            .collect();
        reach.push(json!({"term": {"findable": true}}));
        let mut filter = vec![json!({"bool": {"should": reach, "minimum_should_match": 1}})];
        if let Some(author) = s.from {
            filter.push(json!({"term": {"author": author}}));
        }
        if s.has_media {
            filter.push(json!({"term": {"has_media": true}}));
        }
        if s.since.is_some() || s.until.is_some() {
            let mut range = serde_json::Map::new();
            if let Some(since) = s.since {
                range.insert("gte".into(), since.into());
            }
            if let Some(until) = s.until {
                range.insert("lt".into(), until.into());
            }
            filter.push(json!({"range": {"createtime": range}}));
        }
        if let (true, Some(before)) = (with_cursor, s.before) {
            filter.push(json!({"range": {"id": {"lt": before}}}));
        }
        json!({"bool": {"must": must, "filter": filter}})
    }

    async fn hits(&self, body: Value) -> StoreResult<Vec<(SearchHit, f32)>> {
        self.ensure().await?;
        let answer = self
            .ok(
                reqwest::Method::POST,
                &format!("{}/_search", self.index),
                Some(Body::Json(body)),
            )
            .await?;
        let hits = answer["hits"]["hits"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        Ok(hits
            .iter()
            .filter_map(|h| {
                let id = h["_id"].as_str()?.parse().ok()?;
                let author = h["_source"]["author"].as_i64()?;
                let score = h["_score"].as_f64().unwrap_or(0.0) as f32;
                Some((SearchHit { id, author }, score))
            })
            .collect())
    }
}

/// Bulk entries that index `posts` into `index`.
fn index_lines(index: &str, posts: &[IndexedPost]) -> Vec<String> {
    posts
        .iter()
        .map(|post| {
            let action = json!({"index": {"_index": index, "_id": post.id.to_string()}});
            format!("{action}\n{}\n", OpenSearchIndex::document(post))
        })
        .collect()
}

enum Body {
    Json(Value),
    Lines(String),
}

/// What went wrong, by the engine's name for it: its reasons can quote
/// what was sent (a post's words, a reader's circle), which logs must not
/// hold.
fn summary(answer: &Value) -> String {
    match answer["error"]["type"].as_str().or(answer["type"].as_str()) {
        Some(kind) => kind.to_string(),
        None => "an answer that names no error".into(),
    }
}

/// A request's path without its query, for a log line.
fn route(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

#[async_trait]
impl SearchIndex for OpenSearchIndex {
    async fn index_posts(&self, posts: &[IndexedPost]) -> StoreResult<()> {
        // Cutting the text is CPU work: off the async workers.
        let (posts, index) = (posts.to_vec(), self.index.clone());
        let lines = tokio::task::spawn_blocking(move || index_lines(&index, &posts))
            .await
            .map_err(|e| StoreError::Other(e.into()))?;
        self.bulk(lines).await
    }

    async fn remove_posts(&self, ids: &[i64]) -> StoreResult<()> {
        let entries = ids
            .iter()
            .map(|id| {
                let action = json!({"delete": {"_index": self.index, "_id": id.to_string()}});
                format!("{action}\n")
            })
            .collect();
        self.bulk(entries).await
    }

    async fn remove_authors(&self, uids: &[i64]) -> StoreResult<()> {
        if uids.is_empty() {
            return Ok(());
        }
        self.ensure().await?;
        self.ok(
            reqwest::Method::POST,
            &format!(
                "{}/_delete_by_query?refresh=true&conflicts=proceed",
                self.index
            ),
            Some(Body::Json(json!({"query": {"terms": {"author": uids}}}))),
        )
        .await?;
        Ok(())
    }

    async fn clear(&self) -> StoreResult<()> {
        self.ready.store(false, Ordering::Release);
        for name in [self.index.clone(), self.mark_index()] {
            let (status, answer) = self.call(reqwest::Method::DELETE, &name, None).await?;
            let missing = answer["error"]["type"] == "index_not_found_exception";
            if !status.is_success() && !missing {
                return Err(StoreError::Other(anyhow::anyhow!(
                    "OpenSearch refused to delete the index {name}: {}",
                    summary(&answer)
                )));
            }
        }
        self.ensure().await
    }

    async fn search_posts(&self, search: &PostSearch) -> StoreResult<Vec<SearchHit>> {
        if search.limit == 0 {
            return Ok(vec![]);
        }
        let body = json!({
            "size": search.limit,
            "query": Self::query(search, true),
            "sort": [{"id": "desc"}],
            "_source": ["author"],
            "track_total_hits": false,
        });
        Ok(self.hits(body).await?.into_iter().map(|(h, _)| h).collect())
    }

    async fn search_posts_by_relevance(&self, search: &PostSearch) -> StoreResult<Vec<ScoredHit>> {
        if search.limit == 0 {
            return Ok(vec![]);
        }
        let body = json!({
            "size": search.limit,
            "query": Self::query(search, false),
            "sort": [{"_score": "desc"}, {"id": "desc"}],
            "track_scores": true,
            "_source": ["author"],
            "track_total_hits": false,
        });
        Ok(self
            .hits(body)
            .await?
            .into_iter()
            .map(|(hit, score)| ScoredHit { hit, score })
            .collect())
    }

    async fn indexed_through(&self) -> StoreResult<Option<i64>> {
        self.ensure().await?;
        let (status, answer) = self
            .call(
                reqwest::Method::GET,
                &format!("{}/_doc/mark", self.mark_index()),
                None,
            )
            .await?;
        if status == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(StoreError::Other(anyhow::anyhow!(
                "OpenSearch answered {status} to reading the mark: {}",
                summary(&answer)
            )));
        }
        Ok(answer["_source"]["through"].as_i64())
    }

    async fn index_posts_through(&self, posts: &[IndexedPost], mark: i64) -> StoreResult<()> {
        self.index_posts(posts).await?;
        self.ok(
            reqwest::Method::PUT,
            &format!("{}/_doc/mark", self.mark_index()),
            Some(Body::Json(json!({"through": mark}))),
        )
        .await?;
        Ok(())
    }
}
