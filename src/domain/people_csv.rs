//! Lists of people as CSV, as an import reads them: this service's own
//! (`Account address,uid,since`, what an export writes) and Mastodon's
//! (`following_accounts.csv` with its header, `blocked_accounts.csv` with
//! none, one `user@host` a line). Each row names one account by its
//! address: a bare username, or `username@host` where the host is this
//! service's; any other host is another service's account.

use crate::domain::user::Username;
use crate::error::AppError;

/// Rows one import may hold: the caps of every list are below it.
pub const MAX_ROWS: usize = 10_000;

/// Bytes of CSV one import may send: `MAX_ROWS` rows of Mastodon's widest.
pub const MAX_BYTES: usize = 1024 * 1024;

/// One row that names someone.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Its line in the file, from 1.
    pub line: usize,
    /// The address as written (trimmed).
    pub value: String,
    /// The username it names, or why it names nobody here.
    pub username: Result<Username, RowProblem>,
}

/// Why an import cannot use a row, as a code a client words in its own
/// language (the API gives an English sentence beside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RowProblem {
    /// Not the shape of a username.
    NotAUsername,
    /// `user@host` with a host other than this service's.
    OtherService,
    /// A username no account here has.
    NoSuchUser,
    /// The importer's own name.
    Yourself,
    /// Someone an earlier row named already.
    ListedTwice,
    /// The importer blocks them (one who blocks the importer is
    /// `NoSuchUser` to it, as their profile is).
    BlockBetween,
    /// Hiding from someone who does not follow the importer.
    NotAFollower,
    /// Past the cap of the list.
    OverCap,
}

/// The rows of `csv` that name someone (blank lines and the header left
/// out), with `host` this service's host name.
pub fn read(csv: &str, host: &str) -> Result<Vec<Row>, AppError> {
    // A spreadsheet saving "CSV UTF-8" starts the file with a byte-order
    // mark, which would otherwise hide the header.
    let csv = csv.strip_prefix('\u{feff}').unwrap_or(csv);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(csv.as_bytes());
    let mut column = 0;
    let mut rows = Vec::new();
    // Lines counted from each record's byte offset: the reader's own line
    // count leaves out the blank lines it skips.
    let (mut counted_to, mut line) = (0usize, 1usize);
    for (i, record) in reader.records().enumerate() {
        let record = record.map_err(|e| AppError::invalid("csv", format!("not CSV: {e}")))?;
        let mut at = record
            .position()
            .and_then(|p| usize::try_from(p.byte()).ok())
            .unwrap_or(counted_to)
            .min(csv.len());
        // The reader's position is where it started reading the record,
        // before the blank lines it skipped.
        while matches!(csv.as_bytes().get(at), Some(b'\n' | b'\r')) {
            at += 1;
        }
        line += csv.as_bytes()[counted_to.min(at)..at]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        counted_to = counted_to.max(at);
        if i == 0 {
            if let Some(at) = record
                .iter()
                .position(|c| c.trim().eq_ignore_ascii_case("account address"))
            {
                column = at;
                continue;
            }
        }
        let value = record.get(column).unwrap_or("").trim().to_string();
        if value.is_empty() && record.iter().all(|c| c.trim().is_empty()) {
            continue;
        }
        if rows.len() == MAX_ROWS {
            return Err(AppError::invalid(
                "csv",
                format!("at most {MAX_ROWS} rows per import"),
            ));
        }
        let username = username_of(&value, host);
        rows.push(Row {
            line,
            value,
            username,
        });
    }
    Ok(rows)
}

/// The username an address names here.
fn username_of(address: &str, host: &str) -> Result<Username, RowProblem> {
    // An export writes a cell a spreadsheet would run with a ' in front.
    let address = address.strip_prefix('\'').unwrap_or(address);
    let address = address.strip_prefix('@').unwrap_or(address);
    let name = match address.split_once('@') {
        None => address,
        Some((name, their)) if their.eq_ignore_ascii_case(host) => name,
        Some(_) => return Err(RowProblem::OtherService),
    };
    Username::parse(name).map_err(|_| RowProblem::NotAUsername)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(rows: &[Row]) -> Vec<(usize, Result<String, RowProblem>)> {
        rows.iter()
            .map(|r| {
                (
                    r.line,
                    r.username
                        .as_ref()
                        .map(|u| u.as_str().to_string())
                        .map_err(|p| *p),
                )
            })
            .collect()
    }

    #[test]
    fn mastodon_and_our_own_lists_name_the_same_people() {
        let host = "moments.example";
        let mastodon = "Account address,Show boosts,Notify on new posts,Languages\n\
                        wangwu@moments.example,true,false,\n\
                        lisi@Moments.Example,true,false,zh\n\
                        someone@mastodon.social,true,false,\n";
        let ours = "Account address,uid,since\nwangwu,7,2026-12-01T00:00:00Z\n'-odd,8,2026-12-01T00:00:00Z\n";
        let blocked = "@zhaoliu@moments.example\n\nnot a name!\n";
        assert_eq!(
            names(&read(mastodon, host).unwrap()),
            vec![
                (2, Ok("wangwu".into())),
                (3, Ok("lisi".into())),
                (4, Err(RowProblem::OtherService)),
            ]
        );
        let ours = read(ours, host).unwrap();
        assert_eq!(ours[0].username.as_ref().unwrap().as_str(), "wangwu");
        assert_eq!(ours[1].value, "'-odd");
        assert_eq!(
            names(&read(blocked, host).unwrap()),
            vec![
                (1, Ok("zhaoliu".into())),
                (3, Err(RowProblem::NotAUsername))
            ]
        );
    }

    #[test]
    fn a_byte_order_mark_hides_no_header() {
        let csv = "\u{feff}Account address,Show boosts\nwangwu@h,true\n";
        assert_eq!(
            names(&read(csv, "h").unwrap()),
            vec![(2, Ok("wangwu".into()))]
        );
    }

    #[test]
    fn a_list_past_the_row_cap_is_refused_whole() {
        let csv: String = (0..=MAX_ROWS).map(|i| format!("u{i}\n")).collect();
        assert!(read(&csv, "h").is_err());
        let csv: String = (0..MAX_ROWS).map(|i| format!("u{i}\n")).collect();
        assert_eq!(read(&csv, "h").unwrap().len(), MAX_ROWS);
    }
}
