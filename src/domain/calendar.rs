//! Calendar arithmetic on epoch milliseconds, in UTC: the civil date of an
//! instant, and an instant written as RFC 3339. Below every other module
//! (an error message and a post's time text both need it).

/// A day in milliseconds.
pub const DAY: i64 = 24 * 3600 * 1000;

/// An epoch-millisecond instant as RFC 3339 in UTC, to the second
/// (`2026-12-03T17:30:00Z`), for messages.
pub fn utc_text(ms: i64) -> String {
    let (y, m, d) = civil_date(ms);
    let secs = ms.rem_euclid(DAY) / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// (year, month 1..=12, day 1..=31) of an epoch-millisecond instant, by
/// Howard Hinnant's days-from-civil inverse (exact over the proleptic Gregorian calendar).
pub fn civil_date(ms: i64) -> (i64, u32, u32) {
    let z = ms.div_euclid(DAY) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}
