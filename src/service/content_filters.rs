//! Content filters: objectionable material refused before it is posted.
//! Moderators and admins keep the list (`/admin/filters`, at most 10,000
//! terms, every change in the audit log); every instance keeps it whole as
//! one automaton (`domain::content_filter`), reloaded when the live
//! store's version of it moves, so a check costs no store round trip.
//! Posts, comments, nicknames and label names are checked.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};

use serde::Serialize;

use super::jobs::shared_tables::SharedCopy;
use super::read::responses::Page;
use super::staff::audit;
use super::{with_fresh_id, Context};
use crate::domain::content_filter::{
    ContentFilterRequest, ContentFilterSpec, FilterAction, FilterSet, MAX_FILTERS,
};
use crate::domain::cursor::Cursor;
use crate::error::{AppError, AppResult};
use crate::ids::now_ms;
use crate::store::{ContentFilterDoc, DocStore, HeldBy, SharedTable};

/// This instance's copy of the filters.
pub struct ContentFilters {
    set: RwLock<Arc<FilterSet>>,
    /// The live store's version at the last reload; `u64::MAX` before any.
    seen_version: AtomicU64,
}

impl Default for ContentFilters {
    fn default() -> Self {
        ContentFilters {
            set: RwLock::default(),
            seen_version: AtomicU64::new(u64::MAX),
        }
    }
}

impl ContentFilters {
    fn current(&self) -> Arc<FilterSet> {
        self.set.read().map(|s| s.clone()).unwrap_or_default()
    }

    /// 422 naming `field` and the filter's public reason when `text`
    /// matches a `reject` filter. What cannot be held (a comment, a
    /// nickname, a label name) is refused by a `hold` filter too, but with
    /// a 422 that names neither the filter nor its reason: a post that one
    /// holds says only that it is held, so a comment must not tell anyone
    /// probing which words a moderator keeps for review, or why.
    pub fn refuse_matching(&self, field: &str, text: &str) -> AppResult<()> {
        match self.judge(field, text)? {
            Some(_) => Err(AppError::unprocessable(
                field,
                "refused: this would need a moderator's review, which only a post can wait for",
            )),
            None => Ok(()),
        }
    }

    /// For a post: 422 as `refuse_matching` for a `reject` filter; the
    /// `hold` filter it matches, if any, for the caller to hold it by.
    pub fn judge(&self, field: &str, text: &str) -> AppResult<Option<HeldBy>> {
        match self.current().check(text) {
            Some(hit) => match hit.action {
                FilterAction::Reject => Err(refusal(field, &hit.reason)),
                FilterAction::Hold => Ok(Some(HeldBy::by(hit.id, hit.reason.clone()))),
            },
            None => Ok(None),
        }
    }
}

fn refusal(field: &str, reason: &str) -> AppError {
    AppError::unprocessable(field, format!("refused by a content filter: {reason}"))
}

#[async_trait::async_trait]
impl SharedCopy for ContentFilters {
    const TABLE: SharedTable = SharedTable::ContentFilters;

    fn seen_version(&self) -> &AtomicU64 {
        &self.seen_version
    }

    async fn reload(&self, docs: &dyn DocStore) -> AppResult<()> {
        let rows = docs.content_filters().await?;
        let set = FilterSet::build(rows.into_iter().map(|f| (f.id, f.term, f.action, f.reason)));
        if let Ok(mut s) = self.set.write() {
            *s = Arc::new(set);
        }
        Ok(())
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContentFilterView {
    pub id: i64,
    pub term: String,
    pub action: FilterAction,
    pub reason: String,
    pub updated_at: i64,
    pub updated_by: i64,
}

impl From<ContentFilterDoc> for ContentFilterView {
    fn from(f: ContentFilterDoc) -> Self {
        ContentFilterView {
            id: f.id,
            term: f.term,
            action: f.action,
            reason: f.reason,
            updated_at: f.updated_at,
            updated_by: f.updated_by,
        }
    }
}

/// Tells every instance (this one at once) that the list changed.
async fn announce(ctx: &Context) -> AppResult<()> {
    if let Err(e) = ctx
        .live
        .bump_table_version(SharedTable::ContentFilters)
        .await
    {
        tracing::warn!(error = %e, "could not announce a content filter change; other instances pick it up on their next successful poll");
    }
    ctx.content_filters.reload(ctx.docs.as_ref()).await
}

/// The filters, newest first, a page at a time.
pub async fn list(
    ctx: &Context,
    cursor: Option<Cursor>,
    limit: usize,
) -> AppResult<Page<ContentFilterView>> {
    let mut all = ctx.docs.content_filters().await?;
    all.sort_unstable_by_key(|f| std::cmp::Reverse(f.id));
    let before = cursor.map(|c| c.0);
    let mut page: Vec<ContentFilterDoc> = all
        .into_iter()
        .filter(|f| before.is_none_or(|b| f.id < b))
        .take(limit + 1)
        .collect();
    let next_cursor = (page.len() > limit).then(|| {
        page.truncate(limit);
        page.last().map(|f| Cursor::encode(f.id))
    });
    Ok(Page {
        items: page.into_iter().map(ContentFilterView::from).collect(),
        next_cursor: next_cursor.flatten(),
        server_time: now_ms(),
    })
}

pub async fn create(
    ctx: &Context,
    moderator: i64,
    req: ContentFilterRequest,
) -> AppResult<ContentFilterView> {
    let spec = ContentFilterSpec::parse(req)?;
    if ctx.docs.content_filters().await?.len() >= MAX_FILTERS {
        return Err(AppError::Conflict(format!(
            "there are {MAX_FILTERS} filters already: delete one first"
        )));
    }
    let doc = with_fresh_id(|id| {
        let doc = ContentFilterDoc {
            id,
            term: spec.term.clone(),
            action: spec.action,
            reason: spec.reason.clone(),
            updated_at: now_ms(),
            updated_by: moderator,
        };
        async move { ctx.docs.insert_content_filter(&doc).await.map(|()| doc) }
    })
    .await?;
    audit(
        ctx,
        moderator,
        "filter.create",
        format!("filter:{}", doc.id),
        &doc.term,
    )
    .await;
    announce(ctx).await?;
    Ok(doc.into())
}

pub async fn update(
    ctx: &Context,
    moderator: i64,
    id: i64,
    req: ContentFilterRequest,
) -> AppResult<ContentFilterView> {
    let spec = ContentFilterSpec::parse(req)?;
    let doc = ContentFilterDoc {
        id,
        term: spec.term,
        action: spec.action,
        reason: spec.reason,
        updated_at: now_ms(),
        updated_by: moderator,
    };
    if !ctx.docs.update_content_filter(&doc).await? {
        return Err(AppError::NotFound("filter"));
    }
    audit(
        ctx,
        moderator,
        "filter.update",
        format!("filter:{id}"),
        &doc.term,
    )
    .await;
    announce(ctx).await?;
    Ok(doc.into())
}

pub async fn delete(ctx: &Context, moderator: i64, id: i64) -> AppResult<()> {
    if !ctx.docs.delete_content_filter(id).await? {
        return Err(AppError::NotFound("filter"));
    }
    audit(ctx, moderator, "filter.delete", format!("filter:{id}"), "").await;
    announce(ctx).await
}
