//! Labels (标签): each user's named groups of friends, which `only` and
//! `except` posts name as their audience. A post keeps the label's id, not
//! its members, so a label change applies to earlier posts on their next
//! read: reads probe the label's live member set (`visibility`).

use serde::Serialize;

use super::feed::page::forget_timeline;
use super::read::loader::Loader;
use super::read::responses::Page;
use super::{with_fresh_id, Context, Relations};
use crate::domain::label::{
    parse_members, parse_name, LabelPatchRequest, NewLabelRequest, MAX_LABELS,
};
use crate::error::{AppError, AppResult};
use crate::ids::{now_ms, timestamp_of};
use crate::store::{Changes, LabelDoc, LiveChange, LiveKey, Owner, SetKey, StoreError};

#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelView {
    pub id: i64,
    pub name: String,
    /// Uids, in the order they were given.
    pub members: Vec<i64>,
    pub member_count: usize,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<LabelDoc> for LabelView {
    fn from(l: LabelDoc) -> Self {
        LabelView {
            id: l.id,
            name: l.name,
            member_count: l.members.len(),
            members: l.members,
            created_at: l.created_at,
            updated_at: l.updated_at,
        }
    }
}

fn name_taken(e: StoreError) -> AppError {
    match e {
        StoreError::Duplicate(_) => {
            AppError::Conflict("you have a label of that name already".into())
        }
        other => other.into(),
    }
}

/// A label holds friends only: 422 naming the uids that are not the
/// owner's friends (unknown and erased accounts included: they have no
/// follows).
async fn check_friends(ctx: &Context, owner: i64, members: &[i64]) -> AppResult<()> {
    if members.is_empty() {
        return Ok(());
    }
    let mut loader = Loader::new(ctx);
    let loaded = loader
        .load(&[], &Relations::reads(ctx, Some(owner)))
        .await?;
    let mut rel = Relations::from_loaded(Some(owner), &loaded);
    let friends: Vec<i64> = members
        .iter()
        .copied()
        .filter(|m| rel.sets.friends.contains(m))
        .collect();
    super::read::visibility_reads::settle_blocks(&mut loader, &mut rel, friends).await?;
    loader.finish("label_members");
    let strangers: Vec<String> = members
        .iter()
        .filter(|m| !rel.sets.friends.contains(m) || rel.blocked(**m))
        .map(|m| m.to_string())
        .collect();
    if strangers.is_empty() {
        return Ok(());
    }
    Err(AppError::unprocessable(
        "members",
        format!(
            "a label holds your friends only; these are not: {}",
            strangers.join(", ")
        ),
    ))
}

#[tracing::instrument(skip(ctx, req))]
pub async fn create(ctx: &Context, owner: i64, req: NewLabelRequest) -> AppResult<LabelView> {
    let name = parse_name(&req.name)?;
    ctx.content_filters.refuse_matching("name", &name)?;
    let members = parse_members(req.members)?;
    check_friends(ctx, owner, &members).await?;
    let mine = ctx.docs.labels_of(owner, MAX_LABELS).await?;
    if mine.len() >= MAX_LABELS {
        return Err(AppError::Conflict(format!(
            "you have {MAX_LABELS} labels, the most one account may; delete one first"
        )));
    }
    let label = with_fresh_id(|id| {
        let label = LabelDoc {
            id,
            owner,
            name: name.clone(),
            members: members.clone(),
            created_at: timestamp_of(id),
            updated_at: timestamp_of(id),
        };
        async move { ctx.docs.insert_label(&label).await.map(|()| label) }
    })
    .await
    .map_err(name_taken)?;
    Ok(label.into())
}

/// All the owner's labels (there are at most `MAX_LABELS`), oldest first.
pub async fn list(ctx: &Context, owner: i64) -> AppResult<Page<LabelView>> {
    let labels = ctx.docs.labels_of(owner, MAX_LABELS).await?;
    Ok(Page {
        items: labels.into_iter().map(LabelView::from).collect(),
        next_cursor: None,
        server_time: now_ms(),
    })
}

#[tracing::instrument(skip(ctx, patch))]
pub async fn update(
    ctx: &Context,
    owner: i64,
    id: i64,
    patch: LabelPatchRequest,
) -> AppResult<LabelView> {
    let name = patch.name.as_deref().map(parse_name).transpose()?;
    if let Some(n) = &name {
        ctx.content_filters.refuse_matching("name", n)?;
    }
    let members = patch.members.map(parse_members).transpose()?;
    let before = ctx
        .docs
        .labels_by_ids(&[(owner, id)])
        .await?
        .pop()
        .ok_or(AppError::NotFound("label"))?;
    if let Some(m) = &members {
        let added: Vec<i64> = m
            .iter()
            .copied()
            .filter(|u| !before.members.contains(u))
            .collect();
        check_friends(ctx, owner, &added).await?;
    }
    let label = ctx
        .docs
        .update_label(owner, id, name.as_deref(), members.as_deref(), now_ms())
        .await
        .map_err(name_taken)?
        .ok_or(AppError::NotFound("label"))?;
    // Earlier posts naming the label follow it on their next read. Those
    // added may lack them in their timelines (the fan-out passed them
    // over): theirs are rebuilt on their next read.
    let mut changes = vec![Changes {
        owner: Owner::User(owner),
        expected_gen: None,
        changes: vec![drop_members(owner, id)],
    }];
    changes.extend(
        label
            .members
            .iter()
            .filter(|u| !before.members.contains(u))
            .map(|u| Changes {
                owner: Owner::User(*u),
                expected_gen: None,
                changes: vec![forget_timeline(*u)],
            }),
    );
    ctx.repair.apply(ctx.live.as_ref(), changes).await;
    Ok(label.into())
}

fn drop_members(owner: i64, id: i64) -> LiveChange {
    LiveChange::Drop(LiveKey::Set(SetKey::LabelMembers(owner, id)))
}

#[tracing::instrument(skip(ctx))]
pub async fn delete(ctx: &Context, owner: i64, id: i64) -> AppResult<()> {
    if !ctx.docs.delete_label(owner, id).await? {
        return Err(AppError::NotFound("label"));
    }
    ctx.repair
        .apply_unordered(
            ctx.live.as_ref(),
            Owner::User(owner),
            vec![drop_members(owner, id)],
        )
        .await;
    Ok(())
}
