//! Relative time as a Moments client shows it: 刚刚 under a minute, N分钟前 under an hour,
//! N小时前 under a day, else the date in the reader's time zone (UTC+8 by
//! default). Clients may do this themselves from `createtime` and
//! `serverTime`; `?lang=` asks the server to do it by the same rule.

use super::calendar::{civil_date, DAY};
use super::lang::Lang;
use crate::error::AppError;

/// What `TzOffset::parse` accepts: `Z`, `UTC`, or a sign (`+`, `-`, or the
/// space an unescaped `+` decodes to; none means `+`) and hours 0 to 14,
/// with minutes after a colon, or four digits. Empty is the default, UTC+8.
pub const TZ_PATTERN: &str =
    "^(Z|UTC|[-+ ]?((0?[0-9]|1[0-4])(:[0-5][0-9])?|(0[0-9]|1[0-4])[0-5][0-9]))?$";

/// A fixed UTC offset in minutes, as `+08:00`, `-0530`, `+8` or `Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TzOffset(i32);

impl Default for TzOffset {
    fn default() -> Self {
        TzOffset(8 * 60)
    }
}

impl TzOffset {
    pub fn minutes(self) -> i32 {
        self.0
    }

    pub fn parse(raw: &str) -> Result<Self, AppError> {
        let bad = || AppError::invalid("tz", "must be an offset such as +08:00 or -05:30");
        if raw == "Z" || raw == "UTC" {
            return Ok(TzOffset(0));
        }
        let (sign, rest) = match raw.as_bytes().first() {
            Some(b'-') => (-1, &raw[1..]),
            Some(b'+' | b' ') => (1, &raw[1..]),
            _ => (1, raw),
        };
        // Byte offsets below must fall on character boundaries.
        if !rest.is_ascii() {
            return Err(bad());
        }
        let two_digits = |s: &str| s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit());
        let (h, m) = match rest.split_once(':') {
            Some((h, m)) if two_digits(m) => (h, m),
            Some(_) => return Err(bad()),
            None if rest.len() == 4 => rest.split_at(2),
            None => (rest, "00"),
        };
        if h.is_empty() || h.len() > 2 || !h.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let (h, m): (i32, i32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        if h > 14 || m > 59 || (rest.len() == 4 && !two_digits(&rest[2..])) {
            return Err(bad());
        }
        Ok(TzOffset(sign * (h * 60 + m)))
    }
}

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

/// The text a reader sees for something made at `created` when it is `now`.
pub fn createtime_text(created: i64, now: i64, lang: Lang, tz: TzOffset) -> String {
    let age = now - created;
    if age < MINUTE {
        return match lang {
            Lang::Zh => "刚刚".into(),
            Lang::En => "just now".into(),
        };
    }
    if age < HOUR {
        let n = age / MINUTE;
        return match lang {
            Lang::Zh => format!("{n}分钟前"),
            Lang::En => format!("{n} min ago"),
        };
    }
    if age < DAY {
        let n = age / HOUR;
        return match lang {
            Lang::Zh => format!("{n}小时前"),
            Lang::En => format!("{n} h ago"),
        };
    }
    let offset = i64::from(tz.minutes()) * MINUTE;
    let (y, m, d) = civil_date(created + offset);
    let (now_y, _, _) = civil_date(now + offset);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mon = MONTHS[(m - 1) as usize];
    match (lang, y == now_y) {
        (Lang::Zh, true) => format!("{m}月{d}日"),
        (Lang::Zh, false) => format!("{y}年{m}月{d}日"),
        (Lang::En, true) => format!("{mon} {d}"),
        (Lang::En, false) => format!("{mon} {d}, {y}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 2018-11-28T03:06:10.935Z: a createtime from the original API's example.
    const SEED: i64 = 1_543_374_370_935;

    fn zh(created: i64, now: i64) -> String {
        createtime_text(created, now, Lang::Zh, TzOffset::default())
    }

    #[test]
    fn relative_steps_follow_the_moments_rule() {
        assert_eq!(zh(SEED, SEED), "刚刚");
        assert_eq!(zh(SEED, SEED + 59_999), "刚刚");
        assert_eq!(zh(SEED, SEED + 60_000), "1分钟前");
        assert_eq!(zh(SEED, SEED + 5 * MINUTE + 10), "5分钟前");
        assert_eq!(zh(SEED, SEED + HOUR - 1), "59分钟前");
        assert_eq!(zh(SEED, SEED + HOUR + 27 * MINUTE), "1小时前");
        assert_eq!(zh(SEED, SEED + DAY - 1), "23小时前");
        assert_eq!(
            createtime_text(SEED, SEED + 2 * HOUR, Lang::En, TzOffset::default()),
            "2 h ago"
        );
        assert_eq!(
            createtime_text(SEED, SEED + 3 * MINUTE, Lang::En, TzOffset::default()),
            "3 min ago"
        );
    }

    #[test]
    fn a_clock_ahead_of_the_server_still_reads_just_now() {
        assert_eq!(zh(SEED + 5000, SEED), "刚刚");
    }

    #[test]
    fn older_than_a_day_shows_the_date_in_the_readers_zone() {
        assert_eq!(zh(SEED, SEED + 2 * DAY), "11月28日");
        assert_eq!(zh(SEED, SEED + 400 * DAY), "2018年11月28日");
        // 2018-11-28T20:00Z is already the 29th in UTC+8 but still the 28th in UTC-5.
        let evening = 1_543_435_200_000;
        assert_eq!(zh(evening, evening + 2 * DAY), "11月29日");
        let ny = TzOffset::parse("-05:00").unwrap();
        assert_eq!(
            createtime_text(evening, evening + 2 * DAY, Lang::En, ny),
            "Nov 28"
        );
        assert_eq!(
            createtime_text(evening, evening + 400 * DAY, Lang::En, ny),
            "Nov 28, 2018"
        );
    }

    #[test]
    fn civil_dates_cross_leap_years() {
        assert_eq!(civil_date(0), (1970, 1, 1));
        assert_eq!(
            super::super::calendar::utc_text(SEED),
            "2018-11-28T03:06:10Z"
        );
        assert_eq!(civil_date(951_782_400_000), (2000, 2, 29));
        assert_eq!(civil_date(-1), (1969, 12, 31));
    }

    #[test]
    fn offsets_parse_in_the_usual_spellings() {
        assert_eq!(TzOffset::parse("+08:00").unwrap().minutes(), 480);
        assert_eq!(TzOffset::parse(" 08:00").unwrap().minutes(), 480);
        assert_eq!(TzOffset::parse("-0530").unwrap().minutes(), -330);
        assert_eq!(TzOffset::parse("+8").unwrap().minutes(), 480);
        assert_eq!(TzOffset::parse("Z").unwrap().minutes(), 0);
        for bad in [
            "+15:00", "+08:60", "abc", "", "+123:00", "1€", "+€1", "+0８:00", "008:00", "+8:0",
        ] {
            assert!(TzOffset::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Lang::parse("en-GB").unwrap(), Lang::En);
        assert!(Lang::parse("fr").is_err());
        assert!(Lang::parse("EN").is_err());
    }

    #[test]
    fn the_documented_shapes_are_exactly_what_parses() {
        let tz = regex::Regex::new(TZ_PATTERN).unwrap();
        let chars = ["", "+", "-", " ", "0", "1", "4", "5", "9", ":", "Z", "x"];
        let mut samples = vec![String::from("UTC"), "utc".into(), "z".into()];
        for a in chars {
            for b in chars {
                for c in chars {
                    for d in ["", "0", "9", ":", "5"] {
                        for e in ["", "0", "9"] {
                            samples.push(format!("{a}{b}{c}{d}{e}"));
                        }
                    }
                }
            }
        }
        for s in samples.iter().filter(|s| !s.is_empty()) {
            assert_eq!(tz.is_match(s), TzOffset::parse(s).is_ok(), "tz {s:?}");
        }
        let lang = regex::Regex::new(crate::domain::lang::LANG_PATTERN).unwrap();
        for s in ["zh", "zh-CN", "en-US", "EN", "zh-cn", "en ", "fr"] {
            assert_eq!(lang.is_match(s), Lang::parse(s).is_ok(), "lang {s:?}");
        }
    }
}
