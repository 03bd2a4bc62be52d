//! What an admin says about the service (`GET /instance`): its name, how
//! to reach whoever runs it, and its numbered rules, which reports cite.

use super::staff::audit;
use super::Context;
use crate::domain::instance::InstanceInfo;
use crate::error::AppResult;
use crate::ids::now_ms;
use crate::store::InstanceDoc;

/// The service's name, contact and rules: the defaults until an admin
/// sets them.
pub async fn instance(ctx: &Context) -> AppResult<InstanceInfo> {
    Ok(match ctx.docs.instance_info().await? {
        Some(doc) => InstanceInfo {
            name: doc.name,
            // Stored as "" while unset: the document keeps one shape.
            contact: Some(doc.contact).filter(|c| !c.is_empty()),
            rules: doc.rules,
        },
        None => InstanceInfo::default(),
    })
}

/// Sets the service's name, contact and rules (admins only), logged.
#[tracing::instrument(skip(ctx, info))]
pub async fn set_instance(
    ctx: &Context,
    admin: i64,
    info: InstanceInfo,
) -> AppResult<InstanceInfo> {
    let info = InstanceInfo::parse(info)?;
    let doc = InstanceDoc {
        id: InstanceDoc::ID.into(),
        name: info.name.clone(),
        contact: info.contact.clone().unwrap_or_default(),
        rules: info.rules.clone(),
        updated_at: now_ms(),
    };
    ctx.docs.set_instance_info(&doc).await?;
    let note = format!("{} rules", info.rules.len());
    audit(ctx, admin, "instance.set", "instance".into(), &note).await;
    Ok(info)
}
