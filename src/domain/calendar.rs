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

/// The first instant (epoch ms, UTC) of a civil date written `YYYY-MM-DD`;
/// `None` for anything else or a day the month does not have. The inverse
/// of `civil_date`.
pub fn day_start(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        b.get(r.clone())?
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| text[r].parse().ok())
            .flatten()
    };
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let (yy, mm) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * mm + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let ms = (era * 146_097 + doe - 719_468) * DAY;
    // 31 February comes back as a day of March: refused.
    (civil_date(ms) == (y, m as u32, d as u32)).then_some(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_is_the_start_of_its_day_and_back() {
        assert_eq!(day_start("1970-01-01"), Some(0));
        assert_eq!(day_start("2026-12-06"), Some(1_796_515_200_000));
        assert_eq!(civil_date(day_start("2024-02-29").unwrap()), (2024, 2, 29));
        for bad in [
            "2026-02-30",
            "2025-02-29",
            "2026-13-01",
            "2026-1-01",
            "26-01-01",
            "2026-01-01x",
            "２０２６-01-01",
        ] {
            assert_eq!(day_start(bad), None, "{bad}");
        }
    }
}
