//! Request budgets per account and per client address. Each budget is a
//! fixed-window counter in the live store (shared by every instance on
//! Redis, in process on the embedded default), moved by one atomic script in
//! a round trip the request makes anyway: a signed-in request's counters
//! ride in its session lookup. When the live store cannot be reached the
//! limits are not enforced: refusing everyone would be worse.

use crate::config::{Rate, RateLimits};
use crate::error::{AppError, AppResult};
use crate::store::{LimitCheck, LimitCount};

/// What kind of request is being counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traffic {
    Read,
    Write,
}

/// One counter a request draws on, and the budget it is held to.
#[derive(Debug, Clone)]
pub struct Budget {
    pub check: LimitCheck,
    pub rate: Rate,
    /// Named in the 429: "too many {what}".
    pub what: &'static str,
    /// The setting that holds this budget, `MOMENTS_RATE_*` lowercased
    /// without its prefix (`writes_per_ip`): the label of its rejections.
    pub setting: &'static str,
    /// Counted by the account a token names, before the token is verified.
    pub per_account: bool,
}

fn budget(
    name: &str,
    subject: &str,
    rate: Rate,
    cost: i64,
    what: &'static str,
    setting: &'static str,
) -> Budget {
    Budget {
        check: LimitCheck {
            key: format!("{name}:{subject}"),
            cost,
            window_ms: rate.window_secs * 1000,
            lockout_at: None,
        },
        rate,
        what,
        setting,
        per_account: subject.starts_with("u:"),
    }
}

/// The counts of these budgets taken back: a request that turned out not
/// to be the account's (a forged or stale token) must not spend its budget.
pub fn refunds(budgets: &[Budget]) -> Vec<LimitCheck> {
    budgets
        .iter()
        .filter(|b| b.per_account)
        .map(|b| LimitCheck {
            cost: -b.check.cost,
            ..b.check.clone()
        })
        .collect()
}

/// `judge` for the budgets that are (or are not) the account's.
pub fn judge_where(budgets: &[Budget], counts: &[LimitCount], per_account: bool) -> AppResult<()> {
    let (b, c): (Vec<Budget>, Vec<LimitCount>) = budgets
        .iter()
        .zip(counts)
        .filter(|(b, _)| b.per_account == per_account)
        .map(|(b, c)| (b.clone(), *c))
        .unzip();
    judge(&b, &c)
}

/// The budgets of an ordinary request: its account's (when signed in) and
/// its address's (when known).
pub fn request_budgets(
    limits: Option<&RateLimits>,
    traffic: Traffic,
    uid: Option<i64>,
    addr: Option<&str>,
) -> Vec<Budget> {
    let Some(l) = limits else {
        return Vec::new();
    };
    let (name, mine, per_ip, what, per_ip_setting) = match traffic {
        Traffic::Read => ("reads", l.reads, l.reads_per_ip, "reads", "reads_per_ip"),
        Traffic::Write => (
            "writes",
            l.writes,
            l.writes_per_ip,
            "writes",
            "writes_per_ip",
        ),
    };
    let mut out = Vec::new();
    if let Some(u) = uid {
        out.push(budget(name, &format!("u:{u}"), mine, 1, what, name));
    }
    if let Some(a) = addr {
        out.push(budget(
            name,
            &format!("ip:{a}"),
            per_ip,
            1,
            what,
            per_ip_setting,
        ));
    }
    out
}

/// A sign-in attempt's budget at its address: judged first, before the
/// username is even parsed, so that nothing is hashed (and no per-account
/// counter is made) for an address over its budget.
pub fn login_address_budget(limits: Option<&RateLimits>, addr: Option<&str>) -> Vec<Budget> {
    match (limits, addr) {
        (Some(l), Some(a)) => vec![budget(
            "logins",
            &format!("ip:{a}"),
            l.logins_per_ip,
            1,
            "sign-ins from this address",
            "logins_per_ip",
        )],
        _ => Vec::new(),
    }
}

/// A password check's budget on the account, whatever the address. The
/// attempt is counted as a failure up front, so that parallel guesses
/// cannot all slip under the limit; `forgive_failure` takes it back when
/// the password was right. Only for an account that exists: names nobody
/// has would let anyone make counters at will, and the dummy hash already
/// costs them what a wrong password costs. A counter at its budget is a
/// lockout no store may forget to make room.
pub fn login_failure_budget(limits: Option<&RateLimits>, username: &str) -> Vec<Budget> {
    limits
        .map(|l| {
            let mut b = budget(
                "login_failures",
                &format!("name:{username}"),
                l.login_failures,
                1,
                "failed sign-ins for this account",
                "login_failures",
            );
            b.check.lockout_at = Some(i64::from(l.login_failures.count));
            b
        })
        .into_iter()
        .collect()
}

/// Takes back the failure `login_failure_budget` counted for a right password.
pub fn forgive_failure(limits: Option<&RateLimits>, username: &str) -> Option<LimitCheck> {
    limits.map(|l| LimitCheck {
        key: format!("login_failures:name:{username}"),
        cost: -1,
        window_ms: l.login_failures.window_secs * 1000,
        lockout_at: None,
    })
}

pub fn signup_budgets(limits: Option<&RateLimits>, addr: Option<&str>) -> Vec<Budget> {
    match (limits, addr) {
        (Some(l), Some(a)) => vec![budget(
            "signups",
            &format!("ip:{a}"),
            l.signups_per_ip,
            1,
            "registrations from this address",
            "signups_per_ip",
        )],
        _ => Vec::new(),
    }
}

/// A signed-in lookup of someone by username, on its own budget.
pub fn user_lookup_budgets(limits: Option<&RateLimits>, uid: i64) -> Vec<Budget> {
    limits
        .map(|l| {
            budget(
                "user_lookups",
                &format!("u:{uid}"),
                l.user_lookups,
                1,
                "lookups by username",
                "user_lookups",
            )
        })
        .into_iter()
        .collect()
}

/// Reports filed, per account, on their own budget.
/// What an import of `rows` rows costs the account.
pub fn import_row_budgets(limits: Option<&RateLimits>, uid: i64, rows: usize) -> Vec<Budget> {
    limits
        .map(|l| {
            budget(
                "import_rows",
                &format!("u:{uid}"),
                l.import_rows,
                i64::try_from(rows).unwrap_or(i64::MAX),
                "imported rows",
                "import_rows",
            )
        })
        .into_iter()
        .collect()
}

/// What an upload of `bytes` bytes costs the account's media quota.
pub fn media_byte_budgets(limits: Option<&RateLimits>, uid: i64, bytes: usize) -> Vec<Budget> {
    limits
        .map(|l| {
            budget(
                "media_bytes",
                &format!("u:{uid}"),
                l.media_bytes,
                i64::try_from(bytes).unwrap_or(i64::MAX),
                "bytes of pictures uploaded",
                "media_bytes",
            )
        })
        .into_iter()
        .collect()
}

/// Searches, per account: each page asks the index and checks its hits.
pub fn search_budgets(limits: Option<&RateLimits>, uid: i64) -> Vec<Budget> {
    limits
        .map(|l| {
            budget(
                "searches",
                &format!("u:{uid}"),
                l.searches,
                1,
                "searches",
                "searches",
            )
        })
        .into_iter()
        .collect()
}

pub fn report_budgets(limits: Option<&RateLimits>, uid: i64) -> Vec<Budget> {
    limits
        .map(|l| {
            budget(
                "reports",
                &format!("u:{uid}"),
                l.reports,
                1,
                "reports filed",
                "reports",
            )
        })
        .into_iter()
        .collect()
}

pub fn checks(budgets: &[Budget]) -> Vec<LimitCheck> {
    budgets.iter().map(|b| b.check.clone()).collect()
}

/// 429 for the first budget its counter has gone over.
pub fn judge(budgets: &[Budget], counts: &[LimitCount]) -> AppResult<()> {
    for (b, c) in budgets.iter().zip(counts) {
        if c.count > i64::from(b.rate.count) {
            crate::metrics::rate_limited(b.setting);
            return Err(AppError::RateLimited {
                what: b.what,
                retry_after_secs: c.resets_in_ms.div_ceil(1000).max(1),
            });
        }
    }
    Ok(())
}

/// Charges a request to budgets of its own (beyond the ordinary reads and
/// writes every request is charged), refusing with 429 past any of them. A
/// live store that does not answer lets the request through.
pub(super) async fn enforce(ctx: &super::Context, budgets: &[Budget]) -> AppResult<()> {
    if budgets.is_empty() {
        return Ok(());
    }
    let read = crate::store::LiveRead {
        limits: checks(budgets),
        ..Default::default()
    };
    match ctx.live.read(&read).await {
        Ok(answer) => judge(budgets, &answer.limits),
        Err(e) => {
            tracing::warn!(error = %e, "rate limits not checked: the live store did not answer");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_refuses_past_its_count_with_the_time_left() {
        let limits = RateLimits {
            writes: Rate::new(2, 60),
            ..RateLimits::default()
        };
        let b = request_budgets(Some(&limits), Traffic::Write, Some(7), Some("1.2.3.4"));
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].check.key, "writes:u:7");
        assert_eq!(b[1].check.key, "writes:ip:1.2.3.4");
        assert_eq!((b[0].setting, b[1].setting), ("writes", "writes_per_ip"));
        let count = |n, ms| LimitCount {
            count: n,
            resets_in_ms: ms,
        };
        assert!(judge(&b, &[count(2, 100), count(2, 100)]).is_ok());
        match judge(&b, &[count(3, 1500), count(3, 100)]) {
            Err(AppError::RateLimited {
                retry_after_secs, ..
            }) => assert_eq!(retry_after_secs, 2),
            other => panic!("{other:?}"),
        }
        assert!(request_budgets(None, Traffic::Read, Some(7), None).is_empty());
    }
}
