//! `ModerationDocs` on redb: reports, cases and the audit log.

use super::*;
use crate::store::{
    with_newest, AuditDoc, CaseClosing, CaseDoc, CaseState, ContentFilterDoc, HeldPost,
    HeldPostDoc, InstanceDoc, ModerationDocs, ReportBrief, ReportDoc, StrikeAppeal, StrikeDoc,
    FIRST_REPORTS_KEPT,
};

/// Report id → the report.
pub(super) const REPORTS: TableDefinition<u64, &[u8]> = TableDefinition::new("reports");
/// (case, reporter) → report id: one report per reporter and case.
pub(super) const REPORT_OF_CASE: TableDefinition<(u64, u64), u64> =
    TableDefinition::new("report_of_case");
/// (case, report id) of every report, for the queue.
pub(super) const REPORTS_BY_CASE: TableDefinition<(u64, u64), ()> =
    TableDefinition::new("reports_by_case");
/// (reporter, report id), for "my reports".
pub(super) const REPORTS_BY_REPORTER: TableDefinition<(u64, u64), ()> =
    TableDefinition::new("reports_by_reporter");
/// Case id → the case.
pub(super) const CASES: TableDefinition<u64, &[u8]> = TableDefinition::new("moderation_cases");
/// Target key (`post:ID`) → its open case.
pub(super) const OPEN_CASES: TableDefinition<&str, u64> = TableDefinition::new("open_cases");
/// Held post id → the case holding it.
pub(super) const HELD_POSTS: TableDefinition<u64, u64> = TableDefinition::new("held_posts");
/// (case, post id) of every post a case holds, for its actions.
pub(super) const HELD_BY_CASE: TableDefinition<(u64, u64), ()> =
    TableDefinition::new("held_by_case");
/// (1 open / 0 closed, case id), for the queue.
pub(super) const CASES_BY_STATE: TableDefinition<(u64, u64), ()> =
    TableDefinition::new("cases_by_state");
/// (account, case id) of its open cases, and of its closed ones.
pub(super) const OPEN_CASES_BY_ACCOUNT: TableDefinition<(u64, u64), ()> =
    TableDefinition::new("open_cases_by_account");
pub(super) const CLOSED_CASES_BY_ACCOUNT: TableDefinition<(u64, u64), ()> =
    TableDefinition::new("closed_cases_by_account");
/// Closed cases whose snapshot is not erased yet, for the retention sweep.
pub(super) const SNAPSHOTS_KEPT: TableDefinition<u64, ()> = TableDefinition::new("snapshots_kept");
/// (unfinished since, case id) of closed cases whose action's effects or
/// notifications are not all done.
pub(super) const UNFINISHED_CASES: TableDefinition<(u64, u64), ()> =
    TableDefinition::new("unfinished_cases");
/// `InstanceDoc::ID` → the instance's name, contact and rules.
pub(super) const INSTANCE: TableDefinition<&str, &[u8]> = TableDefinition::new("instance");
/// Filter id → the content filter.
pub(super) const CONTENT_FILTERS: TableDefinition<u64, &[u8]> =
    TableDefinition::new("content_filters");
/// Strike id (its case's) → the strike.
pub(super) const STRIKES: TableDefinition<u64, &[u8]> = TableDefinition::new("strikes");
/// (account, strike id), for an account's strikes.
pub(super) const STRIKES_BY_ACCOUNT: TableDefinition<(u64, u64), ()> =
    TableDefinition::new("strikes_by_account");
/// Entry id → the entry.
pub(super) const AUDIT_LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("audit_log");

fn state_code(open: bool) -> u64 {
    u64::from(open)
}

#[async_trait]
impl ModerationDocs for EmbeddedDocs {
    async fn open_case(&self, case: &CaseDoc) -> StoreResult<CaseDoc> {
        let case = case.clone();
        self.write(move |txn| {
            let mut open = txn.open_table(OPEN_CASES).map_err(other)?;
            let key = case.open_key();
            let mut cases = txn.open_table(CASES).map_err(other)?;
            if let Some(existing) = open.get(key.as_str()).map_err(other)? {
                let existing = existing.value();
                // A key left by a case closed under another key (a held
                // post's, before held posts were grouped) is taken over.
                if let Some(found) =
                    get_doc::<CaseDoc>(&cases, existing)?.filter(|c| c.state == CaseState::Open)
                {
                    return Ok(found);
                }
            }
            open.insert(key.as_str(), id(case.id)).map_err(other)?;
            cases
                .insert(id(case.id), encode(&case)?.as_slice())
                .map_err(other)?;
            txn.open_table(CASES_BY_STATE)
                .map_err(other)?
                .insert((state_code(true), id(case.id)), ())
                .map_err(other)?;
            txn.open_table(OPEN_CASES_BY_ACCOUNT)
                .map_err(other)?
                .insert((id(case.account), id(case.id)), ())
                .map_err(other)?;
            Ok(case.clone())
        })
        .await
    }

    async fn file_report(&self, report: &ReportDoc) -> StoreResult<Option<(ReportDoc, bool)>> {
        let report = report.clone();
        self.write(move |txn| {
            let mut cases = txn.open_table(CASES).map_err(other)?;
            let Some(mut case) = get_doc::<CaseDoc>(&cases, id(report.case_id))? else {
                return Err(StoreError::Other(anyhow::anyhow!(
                    "report filed in case {} that does not exist",
                    report.case_id
                )));
            };
            if case.state != CaseState::Open {
                return Ok(None);
            }
            let mut of_case = txn.open_table(REPORT_OF_CASE).map_err(other)?;
            let mut reports = txn.open_table(REPORTS).map_err(other)?;
            let key = (id(report.case_id), id(report.reporter));
            let earlier = match of_case.get(key).map_err(other)?.map(|v| v.value()) {
                Some(e) => get_doc::<ReportDoc>(&reports, e)?,
                None => None,
            };
            let (stored, new) = match earlier {
                Some(earlier) => {
                    let updated = ReportDoc {
                        id: earlier.id,
                        created_at: earlier.created_at,
                        ..report.clone()
                    };
                    reports
                        .insert(id(earlier.id), encode(&updated)?.as_slice())
                        .map_err(other)?;
                    (updated, false)
                }
                None => {
                    of_case.insert(key, id(report.id)).map_err(other)?;
                    reports
                        .insert(id(report.id), encode(&report)?.as_slice())
                        .map_err(other)?;
                    txn.open_table(REPORTS_BY_CASE)
                        .map_err(other)?
                        .insert((id(report.case_id), id(report.id)), ())
                        .map_err(other)?;
                    txn.open_table(REPORTS_BY_REPORTER)
                        .map_err(other)?
                        .insert((id(report.reporter), id(report.id)), ())
                        .map_err(other)?;
                    case.reporter_count += 1;
                    if case.first_reports.len() < FIRST_REPORTS_KEPT {
                        case.first_reports.push(ReportBrief::from(&report));
                    }
                    (report.clone(), true)
                }
            };
            if !case.categories.contains(&stored.category) {
                case.categories.push(stored.category);
            }
            case.reported_at = case.reported_at.max(stored.updated_at);
            cases
                .insert(id(case.id), encode(&case)?.as_slice())
                .map_err(other)?;
            Ok(Some((stored, new)))
        })
        .await
    }

    async fn cases_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<CaseDoc>> {
        let ids = ids.to_vec();
        self.read(move |txn| docs_by_ids(txn, CASES, &ids)).await
    }

    async fn cases_page(
        &self,
        open: bool,
        account: Option<i64>,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<CaseDoc>> {
        self.read(move |txn| {
            let ids = match account {
                Some(a) => {
                    let def = if open {
                        OPEN_CASES_BY_ACCOUNT
                    } else {
                        CLOSED_CASES_BY_ACCOUNT
                    };
                    newest_below(&txn.open_table(def).map_err(other)?, id(a), before, limit)?
                }
                None => newest_below(
                    &txn.open_table(CASES_BY_STATE).map_err(other)?,
                    state_code(open),
                    before,
                    limit,
                )?,
            };
            let ids: Vec<i64> = ids.into_iter().map(|i| i as i64).collect();
            docs_by_ids(txn, CASES, &ids)
        })
        .await
    }

    async fn reports_of_case(
        &self,
        case_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ReportDoc>> {
        self.read(move |txn| {
            let table = txn.open_table(REPORTS_BY_CASE).map_err(other)?;
            let ids: Vec<i64> = oldest_after(&table, id(case_id), after, limit)?
                .into_iter()
                .map(|r| r as i64)
                .collect();
            docs_by_ids(txn, REPORTS, &ids)
        })
        .await
    }

    async fn reports_by_reporter(
        &self,
        reporter: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<ReportDoc>> {
        self.read(move |txn| {
            let table = txn.open_table(REPORTS_BY_REPORTER).map_err(other)?;
            let ids: Vec<i64> = newest_below(&table, id(reporter), before, limit)?
                .into_iter()
                .map(|i| i as i64)
                .collect();
            docs_by_ids(txn, REPORTS, &ids)
        })
        .await
    }

    async fn hold_in_case(
        &self,
        held: &HeldPostDoc,
        shown: &HeldPost,
    ) -> StoreResult<Option<bool>> {
        let (held, shown) = (held.clone(), shown.clone());
        self.write(move |txn| {
            let mut posts = txn.open_table(HELD_POSTS).map_err(other)?;
            if posts.get(id(held.post_id)).map_err(other)?.is_some() {
                return Ok(Some(false));
            }
            let mut cases = txn.open_table(CASES).map_err(other)?;
            let Some(mut case) = get_doc::<CaseDoc>(&cases, id(held.case_id))? else {
                return Err(StoreError::Other(anyhow::anyhow!(
                    "a post held in case {} that does not exist",
                    held.case_id
                )));
            };
            if case.state != CaseState::Open {
                return Ok(None);
            }
            let Some(by) = case.held.as_mut() else {
                return Err(StoreError::Other(anyhow::anyhow!(
                    "a post held in case {}, which holds none",
                    held.case_id
                )));
            };
            by.count += 1;
            by.posts = with_newest(std::mem::take(&mut by.posts), shown.clone());
            case.reported_at = case.reported_at.max(held.held_at);
            posts
                .insert(id(held.post_id), id(held.case_id))
                .map_err(other)?;
            txn.open_table(HELD_BY_CASE)
                .map_err(other)?
                .insert((id(held.case_id), id(held.post_id)), ())
                .map_err(other)?;
            cases
                .insert(id(case.id), encode(&case)?.as_slice())
                .map_err(other)?;
            Ok(Some(true))
        })
        .await
    }

    async fn held_posts_of_case(
        &self,
        case_id: i64,
        after: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<(i64, Option<u64>)>> {
        // A post is recorded and counted in one transaction here: no
        // close falls between the two, so every record is covered.
        self.read(move |txn| {
            let table = txn.open_table(HELD_BY_CASE).map_err(other)?;
            Ok(oldest_after(&table, id(case_id), after, limit)?
                .into_iter()
                .map(|p| (p as i64, None))
                .collect())
        })
        .await
    }

    async fn forget_held_post(&self, post_id: i64) -> StoreResult<()> {
        self.write(move |txn| {
            let mut posts = txn.open_table(HELD_POSTS).map_err(other)?;
            let case = posts.remove(id(post_id)).map_err(other)?.map(|v| v.value());
            if let Some(case) = case {
                txn.open_table(HELD_BY_CASE)
                    .map_err(other)?
                    .remove((case, id(post_id)))
                    .map_err(other)?;
            }
            Ok(())
        })
        .await
    }

    async fn close_case(
        &self,
        case_id: i64,
        closing: &CaseClosing,
    ) -> StoreResult<Option<CaseDoc>> {
        let closing = closing.clone();
        self.write(move |txn| {
            let mut cases = txn.open_table(CASES).map_err(other)?;
            let Some(mut case) = get_doc::<CaseDoc>(&cases, id(case_id))? else {
                return Ok(None);
            };
            if case.state != CaseState::Open || !case.closed_as_seen(&closing) {
                return Ok(None);
            }
            case.state = closing.state;
            case.closing = Some(closing.clone());
            case.unfinished_since = Some(closing.at);
            txn.open_table(SNAPSHOTS_KEPT)
                .map_err(other)?
                .insert(id(case_id), ())
                .map_err(other)?;
            txn.open_table(UNFINISHED_CASES)
                .map_err(other)?
                .insert((id(closing.at), id(case_id)), ())
                .map_err(other)?;
            cases
                .insert(id(case_id), encode(&case)?.as_slice())
                .map_err(other)?;
            let key = case.open_key();
            let mut open = txn.open_table(OPEN_CASES).map_err(other)?;
            if open.get(key.as_str()).map_err(other)?.map(|v| v.value()) == Some(id(case_id)) {
                open.remove(key.as_str()).map_err(other)?;
            }
            let mut by_state = txn.open_table(CASES_BY_STATE).map_err(other)?;
            by_state
                .remove((state_code(true), id(case_id)))
                .map_err(other)?;
            by_state
                .insert((state_code(false), id(case_id)), ())
                .map_err(other)?;
            txn.open_table(OPEN_CASES_BY_ACCOUNT)
                .map_err(other)?
                .remove((id(case.account), id(case_id)))
                .map_err(other)?;
            txn.open_table(CLOSED_CASES_BY_ACCOUNT)
                .map_err(other)?
                .insert((id(case.account), id(case_id)), ())
                .map_err(other)?;
            Ok(Some(case))
        })
        .await
    }

    async fn unfinished_cases(&self, before: i64, limit: usize) -> StoreResult<Vec<i64>> {
        self.read(move |txn| {
            let table = txn.open_table(UNFINISHED_CASES).map_err(other)?;
            let mut out = Vec::new();
            for entry in table.range(..(id(before), 0)).map_err(other)?.take(limit) {
                out.push(entry.map_err(other)?.0.value().1 as i64);
            }
            Ok(out)
        })
        .await
    }

    async fn mark_finished(&self, case_id: i64) -> StoreResult<()> {
        self.write(move |txn| {
            let mut cases = txn.open_table(CASES).map_err(other)?;
            let Some(mut case) = get_doc::<CaseDoc>(&cases, id(case_id))? else {
                return Ok(());
            };
            let Some(since) = case.unfinished_since.take() else {
                return Ok(());
            };
            txn.open_table(UNFINISHED_CASES)
                .map_err(other)?
                .remove((id(since), id(case_id)))
                .map_err(other)?;
            cases
                .insert(id(case_id), encode(&case)?.as_slice())
                .map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn append_audit(&self, entry: &AuditDoc) -> StoreResult<()> {
        let entry = entry.clone();
        self.write(move |txn| {
            let mut log = txn.open_table(AUDIT_LOG).map_err(other)?;
            if log.get(id(entry.id)).map_err(other)?.is_some() {
                return Err(StoreError::IdTaken);
            }
            log.insert(id(entry.id), encode(&entry)?.as_slice())
                .map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn oldest_open_case(&self) -> StoreResult<Option<CaseDoc>> {
        self.read(|txn| {
            let by_state = txn.open_table(CASES_BY_STATE).map_err(other)?;
            let first = by_state
                .range((state_code(true), 0)..=(state_code(true), u64::MAX))
                .map_err(other)?
                .next()
                .transpose()
                .map_err(other)?
                .map(|(k, _)| k.value().1);
            match first {
                Some(case) => get_doc(&txn.open_table(CASES).map_err(other)?, case),
                None => Ok(None),
            }
        })
        .await
    }

    async fn instance_info(&self) -> StoreResult<Option<InstanceDoc>> {
        self.read(|txn| {
            let table = txn.open_table(INSTANCE).map_err(other)?;
            let found = table.get(InstanceDoc::ID).map_err(other)?;
            found.map(|v| decode(v.value())).transpose()
        })
        .await
    }

    async fn set_instance_info(&self, info: &InstanceDoc) -> StoreResult<()> {
        let info = info.clone();
        self.write(move |txn| {
            txn.open_table(INSTANCE)
                .map_err(other)?
                .insert(InstanceDoc::ID, encode(&info)?.as_slice())
                .map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn content_filters(&self) -> StoreResult<Vec<ContentFilterDoc>> {
        self.read(|txn| {
            let table = txn.open_table(CONTENT_FILTERS).map_err(other)?;
            let mut out = Vec::new();
            for entry in table.iter().map_err(other)? {
                out.push(decode(entry.map_err(other)?.1.value())?);
            }
            Ok(out)
        })
        .await
    }

    async fn insert_content_filter(&self, filter: &ContentFilterDoc) -> StoreResult<()> {
        let filter = filter.clone();
        self.write(move |txn| {
            let mut table = txn.open_table(CONTENT_FILTERS).map_err(other)?;
            if table.get(id(filter.id)).map_err(other)?.is_some() {
                return Err(StoreError::IdTaken);
            }
            table
                .insert(id(filter.id), encode(&filter)?.as_slice())
                .map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn update_content_filter(&self, filter: &ContentFilterDoc) -> StoreResult<bool> {
        let filter = filter.clone();
        self.write(move |txn| {
            let mut table = txn.open_table(CONTENT_FILTERS).map_err(other)?;
            if table.get(id(filter.id)).map_err(other)?.is_none() {
                return Ok(false);
            }
            table
                .insert(id(filter.id), encode(&filter)?.as_slice())
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    async fn delete_content_filter(&self, filter_id: i64) -> StoreResult<bool> {
        self.write(move |txn| {
            let mut table = txn.open_table(CONTENT_FILTERS).map_err(other)?;
            let removed = table.remove(id(filter_id)).map_err(other)?.is_some();
            Ok(removed)
        })
        .await
    }

    async fn audit_page(&self, before: Option<i64>, limit: usize) -> StoreResult<Vec<AuditDoc>> {
        self.read(move |txn| {
            let log = txn.open_table(AUDIT_LOG).map_err(other)?;
            let upper = before.map_or(u64::MAX, id);
            let mut out = Vec::new();
            for entry in log.range(..upper).map_err(other)?.rev().take(limit) {
                out.push(decode(entry.map_err(other)?.1.value())?);
            }
            Ok(out)
        })
        .await
    }

    async fn insert_strike(&self, strike: &StrikeDoc) -> StoreResult<()> {
        let strike = strike.clone();
        self.write(move |txn| {
            let mut strikes = txn.open_table(STRIKES).map_err(other)?;
            if strikes.get(id(strike.id)).map_err(other)?.is_some() {
                return Ok(());
            }
            strikes
                .insert(id(strike.id), encode(&strike)?.as_slice())
                .map_err(other)?;
            txn.open_table(STRIKES_BY_ACCOUNT)
                .map_err(other)?
                .insert((id(strike.uid), id(strike.id)), ())
                .map_err(other)?;
            Ok(())
        })
        .await
    }

    async fn strikes_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<StrikeDoc>> {
        let ids = ids.to_vec();
        self.read(move |txn| docs_by_ids(txn, STRIKES, &ids)).await
    }

    async fn strikes_of(
        &self,
        uid: i64,
        before: Option<i64>,
        limit: usize,
    ) -> StoreResult<Vec<StrikeDoc>> {
        self.read(move |txn| {
            let ids = newest_below(
                &txn.open_table(STRIKES_BY_ACCOUNT).map_err(other)?,
                id(uid),
                before,
                limit,
            )?;
            let ids: Vec<i64> = ids.into_iter().map(|i| i as i64).collect();
            docs_by_ids(txn, STRIKES, &ids)
        })
        .await
    }

    async fn record_appeal(&self, strike_id: i64, appeal: &StrikeAppeal) -> StoreResult<bool> {
        let appeal = appeal.clone();
        self.write(move |txn| {
            let mut strikes = txn.open_table(STRIKES).map_err(other)?;
            let Some(mut strike) = get_doc::<StrikeDoc>(&strikes, id(strike_id))? else {
                return Ok(false);
            };
            if strike.appeal.is_some() {
                return Ok(false);
            }
            strike.appeal = Some(appeal.clone());
            strikes
                .insert(id(strike_id), encode(&strike)?.as_slice())
                .map_err(other)?;
            Ok(true)
        })
        .await
    }

    async fn erase_snapshots(
        &self,
        account: Option<i64>,
        before: i64,
        limit: usize,
    ) -> StoreResult<u64> {
        self.write(move |txn| {
            // Closed cases below `before` whose snapshot is kept: read from
            // the kept ones (erasing takes a case off it, so each sweep
            // reads only what is left), or, for one account, from its
            // closed cases.
            let ids: Vec<u64> = match account {
                Some(a) => {
                    let table = txn.open_table(CLOSED_CASES_BY_ACCOUNT).map_err(other)?;
                    let kept = txn.open_table(SNAPSHOTS_KEPT).map_err(other)?;
                    let mut ids = Vec::new();
                    for entry in table
                        .range((id(a), 0)..(id(a), id(before)))
                        .map_err(other)?
                    {
                        let case_id = entry.map_err(other)?.0.value().1;
                        if kept.get(case_id).map_err(other)?.is_some() {
                            ids.push(case_id);
                            if ids.len() >= limit {
                                break;
                            }
                        }
                    }
                    ids
                }
                None => {
                    let kept = txn.open_table(SNAPSHOTS_KEPT).map_err(other)?;
                    let mut ids = Vec::new();
                    for entry in kept.range(..id(before)).map_err(other)?.take(limit) {
                        ids.push(entry.map_err(other)?.0.value());
                    }
                    ids
                }
            };
            let mut cases = txn.open_table(CASES).map_err(other)?;
            let mut kept = txn.open_table(SNAPSHOTS_KEPT).map_err(other)?;
            for case_id in &ids {
                kept.remove(*case_id).map_err(other)?;
                let Some(mut case) = get_doc::<CaseDoc>(&cases, *case_id)? else {
                    continue;
                };
                case.snapshot.erase();
                if let Some(held) = case.held.as_mut() {
                    held.posts.clear();
                }
                if let Some(appeal) = case.appeal.as_mut() {
                    appeal.text.clear();
                }
                cases
                    .insert(*case_id, encode(&case)?.as_slice())
                    .map_err(other)?;
            }
            Ok(ids.len() as u64)
        })
        .await
    }

    async fn erase_report_comment(&self, report: &ReportDoc) -> StoreResult<()> {
        let (report_id, case_id) = (report.id, report.case_id);
        self.write(move |txn| {
            let mut reports = txn.open_table(REPORTS).map_err(other)?;
            if let Some(mut r) = get_doc::<ReportDoc>(&reports, id(report_id))? {
                r.comment.clear();
                reports
                    .insert(id(report_id), encode(&r)?.as_slice())
                    .map_err(other)?;
            }
            let mut cases = txn.open_table(CASES).map_err(other)?;
            if let Some(mut case) = get_doc::<CaseDoc>(&cases, id(case_id))? {
                for brief in case.first_reports.iter_mut().filter(|b| b.id == report_id) {
                    brief.comment.clear();
                }
                cases
                    .insert(id(case_id), encode(&case)?.as_slice())
                    .map_err(other)?;
            }
            Ok(())
        })
        .await
    }

    async fn lift_strikes(&self, uid: i64, at: i64) -> StoreResult<()> {
        self.write(move |txn| {
            let by_account = txn.open_table(STRIKES_BY_ACCOUNT).map_err(other)?;
            let mut strikes = txn.open_table(STRIKES).map_err(other)?;
            for entry in by_account
                .range((id(uid), 0)..=(id(uid), u64::MAX))
                .map_err(other)?
            {
                let strike_id = entry.map_err(other)?.0.value().1;
                let Some(mut strike) = get_doc::<StrikeDoc>(&strikes, strike_id)? else {
                    continue;
                };
                if strike.lifted_at.is_none() && strike.until.is_some_and(|u| u > at) {
                    strike.lifted_at = Some(at);
                    strikes
                        .insert(strike_id, encode(&strike)?.as_slice())
                        .map_err(other)?;
                }
            }
            Ok(())
        })
        .await
    }

    async fn delete_strikes_of(&self, uid: i64, limit: usize) -> StoreResult<u64> {
        self.write(move |txn| {
            let mut by_account = txn.open_table(STRIKES_BY_ACCOUNT).map_err(other)?;
            let mut keys = Vec::new();
            for entry in by_account
                .range((id(uid), 0)..=(id(uid), u64::MAX))
                .map_err(other)?
                .take(limit)
            {
                keys.push(entry.map_err(other)?.0.value());
            }
            let mut strikes = txn.open_table(STRIKES).map_err(other)?;
            for key in &keys {
                by_account.remove(*key).map_err(other)?;
                strikes.remove(key.1).map_err(other)?;
            }
            Ok(keys.len() as u64)
        })
        .await
    }

    async fn overturn_strike(&self, strike_id: i64, at: i64) -> StoreResult<bool> {
        self.write(move |txn| {
            let mut strikes = txn.open_table(STRIKES).map_err(other)?;
            let Some(mut strike) = get_doc::<StrikeDoc>(&strikes, id(strike_id))? else {
                return Ok(false);
            };
            if strike.overturned_at.is_some() {
                return Ok(false);
            }
            strike.overturned_at = Some(at);
            strikes
                .insert(id(strike_id), encode(&strike)?.as_slice())
                .map_err(other)?;
            Ok(true)
        })
        .await
    }
}

/// Opens every table of this file, so reads find them (`apply_schemas`).
pub(super) fn create_tables(txn: &WriteTransaction) -> StoreResult<()> {
    txn.open_table(REPORTS).map_err(other)?;
    txn.open_table(REPORT_OF_CASE).map_err(other)?;
    txn.open_table(REPORTS_BY_CASE).map_err(other)?;
    txn.open_table(REPORTS_BY_REPORTER).map_err(other)?;
    txn.open_table(CASES).map_err(other)?;
    txn.open_table(OPEN_CASES).map_err(other)?;
    txn.open_table(CASES_BY_STATE).map_err(other)?;
    txn.open_table(OPEN_CASES_BY_ACCOUNT).map_err(other)?;
    txn.open_table(CLOSED_CASES_BY_ACCOUNT).map_err(other)?;
    txn.open_table(AUDIT_LOG).map_err(other)?;
    txn.open_table(INSTANCE).map_err(other)?;
    txn.open_table(CONTENT_FILTERS).map_err(other)?;
    txn.open_table(STRIKES).map_err(other)?;
    txn.open_table(STRIKES_BY_ACCOUNT).map_err(other)?;
    txn.open_table(UNFINISHED_CASES).map_err(other)?;
    txn.open_table(SNAPSHOTS_KEPT).map_err(other)?;
    txn.open_table(HELD_POSTS).map_err(other)?;
    txn.open_table(HELD_BY_CASE).map_err(other)?;
    Ok(())
}
