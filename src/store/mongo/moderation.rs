//! `ModerationDocs` on MongoDB: `reports`, `moderation_cases`,
//! `open_cases` (a target's key → its open case, the claim that makes one
//! case the open one), `held_posts` (a held post → the case holding it), `audit_log`, `instance` (one document), `content_filters` and
//! `strikes`. Moderation is small and read across every target, so these collections are unsharded.

use super::*;
use crate::store::{
    with_newest, AuditDoc, CaseClosing, CaseDoc, CaseState, ContentFilterDoc, HeldPost,
    HeldPostDoc, InstanceDoc, ModerationDocs, ReportBrief, ReportDoc, StrikeAppeal, StrikeDoc,
    FIRST_REPORTS_KEPT,
};

/// A target's open case.
#[derive(Debug, Serialize, Deserialize)]
struct OpenCase {
    #[serde(rename = "_id")]
    key: String,
    #[serde(rename = "caseId")]
    case_id: i64,
}

/// How long the claim of a case's closing refuses another closer.
const CLOSE_CLAIM_KEPT_MS: i64 = 60_000;

fn state_text(state: CaseState) -> StoreResult<mongodb::bson::Bson> {
    mongodb::bson::to_bson(&state).map_err(|e| StoreError::Other(e.into()))
}

impl MongoDocs {
    fn reports(&self) -> Collection<ReportDoc> {
        self.db.collection("reports")
    }
    fn cases(&self) -> Collection<CaseDoc> {
        self.db.collection("moderation_cases")
    }
    fn open_cases(&self) -> Collection<OpenCase> {
        self.db.collection("open_cases")
    }
    fn audit_log(&self) -> Collection<AuditDoc> {
        self.db.collection("audit_log")
    }
    fn content_filters_coll(&self) -> Collection<ContentFilterDoc> {
        self.db.collection("content_filters")
    }
    fn strikes(&self) -> Collection<StrikeDoc> {
        self.db.collection("strikes")
    }
    fn held_posts(&self) -> Collection<HeldPostDoc> {
        self.db.collection("held_posts")
    }

    /// The case the target's claim names, if the claim and an open case
    /// stand; a claim left by a case closed since is dropped.
    async fn claimed_case(&self, key: String) -> StoreResult<Option<OpenCase>> {
        let Some(claim) = self
            .open_cases()
            .find_one(doc! { "_id": &key })
            .await
            .map_err(classify)?
        else {
            return Ok(None);
        };
        let case = self
            .cases()
            .find_one(doc! { "_id": claim.case_id })
            .await
            .map_err(classify)?;
        if case.as_ref().is_some_and(|c| c.state != CaseState::Open) {
            self.open_cases()
                .delete_one(doc! { "_id": &key, "caseId": claim.case_id })
                .await
                .map_err(classify)?;
            return Ok(None);
        }
        Ok(Some(claim))
    }
}

#[async_trait]
impl ModerationDocs for MongoDocs {
    async fn open_case(&self, case: &CaseDoc) -> StoreResult<CaseDoc> {
        // Two tries: a claim lost to a case that closed at that moment is
        // dropped by `claimed_case`, and the second try claims afresh.
        for _ in 0..2 {
            let claim = match self.claimed_case(case.open_key()).await? {
                Some(claim) => claim,
                None => {
                    let mine = OpenCase {
                        key: case.open_key(),
                        case_id: case.id,
                    };
                    if !insert_unless_duplicate(&self.open_cases(), &mine).await? {
                        continue;
                    }
                    mine
                }
            };
            if let Some(found) = self
                .cases()
                .find_one(doc! { "_id": claim.case_id })
                .await
                .map_err(classify)?
            {
                return Ok(found);
            }
            // Claimed (by this call, or by one that stopped before writing
            // its case): the case is written under the claimed id.
            let made = CaseDoc {
                id: claim.case_id,
                ..case.clone()
            };
            insert_unless_duplicate(&self.cases(), &made).await?;
            return Ok(made);
        }
        Err(StoreError::Unavailable(anyhow::anyhow!(
            "the open case of {} kept changing",
            case.open_key()
        )))
    }

    async fn file_report(&self, report: &ReportDoc) -> StoreResult<Option<(ReportDoc, bool)>> {
        let open = state_text(CaseState::Open)?;
        let new = insert_unless_duplicate(&self.reports(), report).await?;
        let stored = if new {
            report.clone()
        } else {
            let category = mongodb::bson::to_bson(&report.category)
                .map_err(|e| StoreError::Other(e.into()))?;
            let rules: Vec<i64> = report.rules.iter().map(|r| i64::from(*r)).collect();
            self.reports()
                .find_one_and_update(
                    doc! { "caseReporter": &report.case_reporter },
                    doc! { "$set": {
                        "category": category,
                        "comment": &report.comment,
                        "postIds": &report.post_ids,
                        "rules": rules,
                        "updatedAt": report.updated_at,
                    } },
                )
                .return_document(mongodb::options::ReturnDocument::After)
                .await
                .map_err(classify)?
                .ok_or_else(|| StoreError::Other(anyhow::anyhow!("a filed report vanished")))?
        };
        let category =
            mongodb::bson::to_bson(&stored.category).map_err(|e| StoreError::Other(e.into()))?;
        let mut update = doc! {
            "$addToSet": { "categories": category },
            "$set": { "reportedAt": stored.updated_at },
        };
        if new {
            update.insert("$inc", doc! { "reporterCount": 1_i64 });
        }
        // Only while the case is open: a report that lands as it closes is
        // taken back (if this call made it) and filed in a new case.
        let case = self
            .cases()
            .find_one_and_update(doc! { "_id": stored.case_id, "state": open }, update)
            .return_document(mongodb::options::ReturnDocument::After)
            .await
            .map_err(classify)?;
        let Some(case) = case else {
            if new {
                self.reports()
                    .delete_one(doc! { "_id": stored.id })
                    .await
                    .map_err(classify)?;
            }
            return Ok(None);
        };
        // The briefs by read and `$set`, not `$push`: nx-27017 stores a
        // pushed subdocument as a string. Two reports racing here may keep
        // one brief between them; the count and the reports stay exact.
        if new && case.first_reports.len() < FIRST_REPORTS_KEPT {
            let mut briefs = case.first_reports;
            briefs.push(ReportBrief::from(&stored));
            let briefs =
                mongodb::bson::to_bson(&briefs).map_err(|e| StoreError::Other(e.into()))?;
            self.cases()
                .update_one(
                    doc! { "_id": stored.case_id },
                    doc! { "$set": { "firstReports": briefs } },
                )
                .await
                .map_err(classify)?;
        }
        Ok(Some((stored, new)))
    }

    async fn cases_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<CaseDoc>> {
        by_ids(self.cases(), ids).await
    }

    async fn cases_page(
        &self,
        open: bool,
        account: Option<i64>,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CaseDoc>> {
        let mut filter = if open {
            doc! { "state": state_text(CaseState::Open)? }
        } else {
            doc! { "state": { "$in": [state_text(CaseState::Actioned)?, state_text(CaseState::Dismissed)?] } }
        };
        if let Some(a) = account {
            filter.insert("account", a);
        }
        newest_page(self.cases(), filter, before, limit).await
    }

    async fn reports_of_case(
        &self,
        case_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ReportDoc>> {
        let mut filter = doc! { "caseId": case_id };
        if let Some(a) = after {
            filter.insert("_id", doc! { "$gt": a });
        }
        collect(
            self.reports()
                .find(filter)
                .sort(doc! { "_id": 1 })
                .limit(limit as i64)
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn reports_by_reporter(
        &self,
        reporter: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ReportDoc>> {
        newest_page(self.reports(), doc! { "reporter": reporter }, before, limit).await
    }

    async fn hold_in_case(
        &self,
        held: &HeldPostDoc,
        shown: &HeldPost,
    ) -> StoreResult<Option<bool>> {
        let recorded = self
            .held_posts()
            .find_one(doc! { "_id": held.post_id })
            .await
            .map_err(classify)?;
        if recorded.is_some() {
            return Ok(Some(false));
        }
        // Counted first, only while the case is open (as `file_report`: a
        // post held as its case closes is held in a new case), then
        // recorded with its place in the count. Recorded first, a close
        // between the two would find the count it was shown and cover a
        // record no one saw; counted first, that close misses (its filter
        // names the count) or, where filters are not checked again, the
        // record's place is past what it covers.
        let inc = |n: i64| {
            doc! { "$inc": { "held.count": n }, "$set": { "reportedAt": held.held_at } }
        };
        let case = self
            .cases()
            .find_one_and_update(
                doc! { "_id": held.case_id, "state": state_text(CaseState::Open)? },
                inc(1),
            )
            .return_document(mongodb::options::ReturnDocument::After)
            .await
            .map_err(classify)?;
        let Some(case) = case else {
            return Ok(None);
        };
        let record = HeldPostDoc {
            seq: case.held.as_ref().map(|h| h.count),
            ..held.clone()
        };
        if !insert_unless_duplicate(&self.held_posts(), &record).await? {
            // Held twice at once: the other insert counts it.
            self.cases()
                .update_one(doc! { "_id": held.case_id }, inc(-1))
                .await
                .map_err(classify)?;
            return Ok(Some(false));
        }
        // By read and `$set`, as the report briefs: two posts held at once
        // may keep one copy between them; the count and the records stay
        // exact.
        let shown = with_newest(
            case.held.map(|h| h.posts).unwrap_or_default(),
            shown.clone(),
        );
        let shown = mongodb::bson::to_bson(&shown).map_err(|e| StoreError::Other(e.into()))?;
        self.cases()
            .update_one(
                doc! { "_id": held.case_id },
                doc! { "$set": { "held.posts": shown } },
            )
            .await
            .map_err(classify)?;
        Ok(Some(true))
    }

    async fn held_posts_of_case(
        &self,
        case_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<(i64, Option<u64>)>> {
        #[derive(serde::Deserialize)]
        struct Placed {
            #[serde(rename = "_id")]
            id: i64,
            #[serde(default)]
            seq: Option<i64>,
        }
        let mut filter = doc! { "caseId": case_id };
        if let Some(a) = after {
            filter.insert("_id", doc! { "$gt": a });
        }
        let found = self
            .db
            .collection::<Placed>("held_posts")
            .find(filter)
            .projection(doc! { "_id": 1, "seq": 1 })
            .sort(doc! { "_id": 1 })
            .limit(limit as i64)
            .await
            .map_err(classify)?;
        Ok(collect(found)
            .await?
            .into_iter()
            .map(|d| (d.id, d.seq.and_then(|s| u64::try_from(s).ok())))
            .collect())
    }

    async fn forget_held_post(&self, post_id: i64) -> StoreResult<()> {
        self.held_posts()
            .delete_one(doc! { "_id": post_id })
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn close_case(
        &self,
        case_id: i64,
        closing: &CaseClosing,
    ) -> StoreResult<Option<CaseDoc>> {
        let Some(case) = self
            .cases()
            .find_one(doc! { "_id": case_id })
            .await
            .map_err(classify)?
        else {
            return Ok(None);
        };
        if case.state != CaseState::Open || !case.closed_as_seen(closing) {
            return Ok(None);
        }
        // Of two moderators closing one case at once, one closes it. A
        // conditional update decides that on MongoDB, but FerretDB applies
        // one without checking its filter again, so both would win there
        // (docs/FERRETDB.md): the close is claimed first, by the one insert
        // exact everywhere. Kept a minute, as the rivals' reads are
        // moments old; the update keeps the condition for MongoDB's sake.
        let claim = format!("close_case:{case_id}");
        if !self
            .claim_kept(claim.clone(), crate::ids::now_ms(), CLOSE_CLAIM_KEPT_MS)
            .await?
        {
            return Ok(None);
        }
        let state = state_text(closing.state)?;
        let closing_doc =
            mongodb::bson::to_bson(closing).map_err(|e| StoreError::Other(e.into()))?;
        let closed = self
            .cases()
            .update_one(
                held_filter(
                    doc! { "_id": case_id, "state": state_text(CaseState::Open)? },
                    closing.held_count,
                ),
                doc! { "$set": {
                    "state": state,
                    "closing": closing_doc,
                    "unfinishedSince": closing.at,
                } },
            )
            .await;
        let closed = match closed {
            Ok(closed) => closed,
            Err(e) => {
                self.unclaim(claim).await;
                return Err(classify(e));
            }
        };
        if closed.modified_count == 0 {
            self.unclaim(claim).await;
            return Ok(None);
        }
        self.open_cases()
            .delete_one(doc! { "_id": case.open_key(), "caseId": case_id })
            .await
            .map_err(classify)?;
        Ok(Some(CaseDoc {
            state: closing.state,
            closing: Some(closing.clone()),
            unfinished_since: Some(closing.at),
            ..case
        }))
    }

    async fn unfinished_cases(&self, before: i64, limit: usize) -> StoreResult<Vec<i64>> {
        let found = self
            .db
            .collection::<IdOnly>("moderation_cases")
            .find(doc! { "unfinishedSince": { "$lt": before } })
            .projection(doc! { "_id": 1 })
            .limit(limit as i64)
            .await
            .map_err(classify)?;
        Ok(collect(found).await?.into_iter().map(|d| d.id).collect())
    }

    async fn mark_finished(&self, case_id: i64) -> StoreResult<()> {
        self.cases()
            .update_one(
                doc! { "_id": case_id },
                doc! { "$unset": { "unfinishedSince": "" } },
            )
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn append_audit(&self, entry: &AuditDoc) -> StoreResult<()> {
        insert_new(&self.audit_log(), entry, "audit entry").await
    }

    async fn oldest_open_case(&self) -> StoreResult<Option<CaseDoc>> {
        self.cases()
            .find_one(doc! { "state": state_text(CaseState::Open)? })
            .sort(doc! { "_id": 1 })
            .await
            .map_err(classify)
    }

    async fn instance_info(&self) -> StoreResult<Option<InstanceDoc>> {
        self.db
            .collection::<InstanceDoc>("instance")
            .find_one(doc! { "_id": InstanceDoc::ID })
            .await
            .map_err(classify)
    }

    async fn set_instance_info(&self, info: &InstanceDoc) -> StoreResult<()> {
        self.db
            .collection::<InstanceDoc>("instance")
            .update_one(
                doc! { "_id": InstanceDoc::ID },
                doc! { "$set": {
                    "name": &info.name,
                    "contact": &info.contact,
                    "rules": &info.rules,
                    "updatedAt": info.updated_at,
                } },
            )
            .upsert(true)
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn content_filters(&self) -> StoreResult<Vec<ContentFilterDoc>> {
        collect(
            self.content_filters_coll()
                .find(doc! {})
                .sort(doc! { "_id": 1 })
                .await
                .map_err(classify)?,
        )
        .await
    }

    async fn insert_content_filter(&self, filter: &ContentFilterDoc) -> StoreResult<()> {
        insert_new(&self.content_filters_coll(), filter, "content filter").await
    }

    async fn update_content_filter(&self, filter: &ContentFilterDoc) -> StoreResult<bool> {
        let action =
            mongodb::bson::to_bson(&filter.action).map_err(|e| StoreError::Other(e.into()))?;
        let r = self
            .content_filters_coll()
            .update_one(
                doc! { "_id": filter.id },
                doc! { "$set": {
                    "term": &filter.term,
                    "action": action,
                    "reason": &filter.reason,
                    "updatedAt": filter.updated_at,
                    "updatedBy": filter.updated_by,
                } },
            )
            .await
            .map_err(classify)?;
        Ok(r.matched_count == 1)
    }

    async fn delete_content_filter(&self, id: i64) -> StoreResult<bool> {
        let r = self
            .content_filters_coll()
            .delete_one(doc! { "_id": id })
            .await
            .map_err(classify)?;
        Ok(r.deleted_count == 1)
    }

    async fn audit_page(&self, before: Option<i64>, limit: usize) -> StoreResult<Vec<AuditDoc>> {
        newest_page(self.audit_log(), doc! {}, before, limit).await
    }

    async fn insert_strike(&self, strike: &StrikeDoc) -> StoreResult<()> {
        // The id is the case's: a duplicate is this strike, recorded by an
        // earlier try of the same action.
        insert_checked(&self.strikes(), strike).await?.ok();
        Ok(())
    }

    async fn strikes_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<StrikeDoc>> {
        by_ids(self.strikes(), ids).await
    }

    async fn strikes_of(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<StrikeDoc>> {
        newest_page(self.strikes(), doc! { "uid": uid }, before, limit).await
    }

    async fn record_appeal(&self, strike_id: i64, appeal: &StrikeAppeal) -> StoreResult<bool> {
        let appeal = mongodb::bson::to_bson(appeal).map_err(|e| StoreError::Other(e.into()))?;
        let r = self
            .strikes()
            .update_one(
                doc! { "_id": strike_id, "appeal": { "$exists": false } },
                doc! { "$set": { "appeal": appeal } },
            )
            .await
            .map_err(classify)?;
        Ok(r.modified_count == 1)
    }

    async fn erase_snapshots(
        &self,
        account: Option<i64>,
        before: i64,
        limit: usize,
    ) -> StoreResult<u64> {
        let closed = [
            state_text(CaseState::Actioned)?,
            state_text(CaseState::Dismissed)?,
        ];
        let mut filter = doc! {
            "state": { "$in": closed.to_vec() },
            "_id": { "$lt": before },
            "snapshot.erased": { "$exists": false },
        };
        if let Some(a) = account {
            filter.insert("account", a);
        }
        // The ids first, then the write by id: an update whose filter is
        // not on `_id` alone is not one to trust on every wire server.
        let ids: Vec<i64> = collect(
            self.db
                .collection::<IdOnly>("moderation_cases")
                .find(filter)
                .projection(doc! { "_id": 1 })
                .limit(limit as i64)
                .await
                .map_err(classify)?,
        )
        .await?
        .into_iter()
        .map(|d| d.id)
        .collect();
        let mut erased = 0;
        for id in ids {
            let r = self
                .cases()
                .update_one(
                    doc! { "_id": id },
                    doc! { "$set": {
                        "snapshot.text": "",
                        "snapshot.pictureUrls": [],
                        "snapshot.authorName": "",
                        "snapshot.erased": true,
                    } },
                )
                .await
                .map_err(classify)?;
            erased += r.modified_count;
            // The copies of held posts are the content too.
            self.cases()
                .update_one(
                    doc! { "_id": id, "held": { "$exists": true } },
                    doc! { "$set": { "held.posts": [] } },
                )
                .await
                .map_err(classify)?;
            // An appeal's text is the appellant's words about the content.
            self.cases()
                .update_one(
                    doc! { "_id": id, "appeal": { "$exists": true } },
                    doc! { "$set": { "appeal.text": "" } },
                )
                .await
                .map_err(classify)?;
        }
        Ok(erased)
    }

    async fn erase_report_comment(&self, report: &ReportDoc) -> StoreResult<()> {
        self.reports()
            .update_one(
                doc! { "_id": report.id },
                doc! { "$set": { "comment": "" } },
            )
            .await
            .map_err(classify)?;
        // The briefs by read and `$set`, as `file_report` writes them.
        let Some(case) = self
            .cases()
            .find_one(doc! { "_id": report.case_id })
            .await
            .map_err(classify)?
        else {
            return Ok(());
        };
        if !case.first_reports.iter().any(|b| b.id == report.id) {
            return Ok(());
        }
        let briefs: Vec<ReportBrief> = case
            .first_reports
            .into_iter()
            .map(|b| ReportBrief {
                comment: if b.id == report.id {
                    String::new()
                } else {
                    b.comment
                },
                ..b
            })
            .collect();
        let briefs = mongodb::bson::to_bson(&briefs).map_err(|e| StoreError::Other(e.into()))?;
        self.cases()
            .update_one(
                doc! { "_id": report.case_id },
                doc! { "$set": { "firstReports": briefs } },
            )
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn lift_strikes(&self, uid: i64, at: i64) -> StoreResult<()> {
        // The ids first (an account has few strikes), then each by id.
        let ids: Vec<i64> = collect(
            self.strikes()
                .find(doc! { "uid": uid, "until": { "$gt": at } })
                .await
                .map_err(classify)?,
        )
        .await?
        .into_iter()
        .filter(|s| s.lifted_at.is_none())
        .map(|s| s.id)
        .collect();
        for id in ids {
            self.strikes()
                .update_one(doc! { "_id": id }, doc! { "$set": { "liftedAt": at } })
                .await
                .map_err(classify)?;
        }
        Ok(())
    }

    async fn delete_strikes_of(&self, uid: i64, limit: usize) -> StoreResult<u64> {
        let ids: Vec<i64> = newest_page(self.strikes(), doc! { "uid": uid }, None, limit)
            .await?
            .into_iter()
            .map(|s| s.id)
            .collect();
        if ids.is_empty() {
            return Ok(0);
        }
        let r = self
            .strikes()
            .delete_many(doc! { "_id": { "$in": ids } })
            .await
            .map_err(classify)?;
        Ok(r.deleted_count)
    }

    async fn overturn_strike(&self, strike_id: i64, at: i64) -> StoreResult<bool> {
        let r = self
            .strikes()
            .update_one(
                doc! { "_id": strike_id, "overturnedAt": { "$exists": false } },
                doc! { "$set": { "overturnedAt": at } },
            )
            .await
            .map_err(classify)?;
        Ok(r.modified_count == 1)
    }
}

/// A case's filter, with the count of held posts it must have when it has
/// any: a post held after the moderator looked makes the close miss (on
/// MongoDB; FerretDB does not check an update's filter again, and there
/// the read before the claim decides).
fn held_filter(mut filter: Document, held_count: Option<u64>) -> Document {
    if let Some(count) = held_count {
        filter.insert("held.count", count as i64);
    }
    filter
}
