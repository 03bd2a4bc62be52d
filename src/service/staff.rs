//! The staff: who moderates (moderators and admins) and the role checks,
//! telling them of a new case, and the append-only audit log of what
//! they do. Below every use case that checks a role, tells the staff or
//! records an action (moderation, strikes, reports, content filters, the
//! instance's rules).

use serde::{Deserialize, Serialize};

use super::notifications::{notify, Event};
use super::{with_fresh_id, Context};
use crate::error::{AppError, AppResult};
use crate::ids::now_ms;
use crate::store::{AuditDoc, NotificationKind, UserDoc};

pub const MODERATOR: &str = "moderator";
pub const ADMIN: &str = "admin";
/// Someone who may handle reports: a moderator or an admin.
pub fn moderates(user: &UserDoc) -> bool {
    user.roles.iter().any(|r| r == MODERATOR || r == ADMIN)
}

pub async fn require_moderator(ctx: &Context, uid: i64) -> AppResult<()> {
    match ctx.docs.users_by_ids(&[uid]).await?.pop() {
        Some(u) if !u.is_erased() && moderates(&u) => Ok(()),
        _ => Err(AppError::Forbidden(
            "this needs the moderator or admin role",
        )),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Moderator,
    Admin,
}

impl Role {
    pub fn of(user: &UserDoc) -> Role {
        if user.is_admin() {
            Role::Admin
        } else if user.roles.iter().any(|r| r == MODERATOR) {
            Role::Moderator
        } else {
            Role::User
        }
    }
    pub fn roles(self) -> Vec<String> {
        match self {
            Role::User => Vec::new(),
            Role::Moderator => vec![MODERATOR.into()],
            Role::Admin => vec![ADMIN.into()],
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Moderator => MODERATOR,
            Role::Admin => ADMIN,
        }
    }
}

/// A note in the audit log of what `actor` did to `subject`.
pub async fn audit(ctx: &Context, actor: i64, action: &str, subject: String, note: &str) {
    let result = with_fresh_id(|id| {
        let entry = AuditDoc {
            id,
            actor,
            action: action.to_string(),
            subject: subject.clone(),
            note: note.to_string(),
            at: now_ms(),
        };
        async move { ctx.docs.append_audit(&entry).await }
    })
    .await;
    if let Err(e) = result {
        // The action stands; its record is what went missing, loudly.
        tracing::error!(error = %e, action, subject, "could not append to the audit log");
    }
}

/// 403 unless `uid` is an admin.
pub async fn require_admin(ctx: &Context, uid: i64) -> AppResult<()> {
    let user = ctx.docs.users_by_ids(&[uid]).await?.pop();
    match user {
        Some(u) if u.is_admin() => Ok(()),
        _ => Err(AppError::Forbidden("this needs the admin role")),
    }
}

/// At most this many moderators and admins are told of a new case.
const STAFF_TOLD: usize = 100;

/// A `report_opened` to each moderator and admin, but the reported
/// account and the reporter: in the background, after the answer.
pub async fn tell_staff(ctx: &Context, case_id: i64, account: i64, reporter: i64) {
    let staff = match ctx.docs.staff(STAFF_TOLD).await {
        Ok(staff) => staff,
        Err(e) => {
            tracing::warn!(error = %e, case_id, "could not tell the moderators of a new report");
            return;
        }
    };
    for uid in staff
        .into_iter()
        .filter(|u| *u != account && *u != reporter)
    {
        notify(
            ctx,
            Event {
                recipient: uid,
                kind: NotificationKind::ReportOpened,
                actor: 0,
                post_id: None,
                comment_id: None,
                report_id: None,
                case_id: Some(case_id),
                strike_id: None,
                dedupe: format!("report_opened:{case_id}"),
            },
        )
        .await;
    }
}
