//! `moments`: a backend for WeChat-Moments / Weibo-style social circles.
//!
//! The crate is split so that each layer only sees the one below it:
//! `http` parses and shapes, `service` holds the use cases, `store` holds the
//! ports and their adapters (MongoDB for the truth, Redis for live state).

pub mod config;
pub mod domain;
pub mod error;
pub mod hashing;
pub mod http;
pub mod ids;
pub mod metrics;
pub mod service;
pub mod startup;
pub mod store;
pub mod telemetry;

#[cfg(test)]
mod tests {
    /// Every source path the documentation names exists: files move (the
    /// service's folders, the store's split), and a page that points at a
    /// file no longer there sends a newcomer on a search.
    #[test]
    fn every_path_the_documentation_names_exists() {
        let root = env!("CARGO_MANIFEST_DIR");
        let pages = [
            ("README.md", include_str!("../README.md")),
            ("BENCHMARKS.md", include_str!("../BENCHMARKS.md")),
            ("docs/SCALING.md", include_str!("../docs/SCALING.md")),
            ("docs/FERRETDB.md", include_str!("../docs/FERRETDB.md")),
        ];
        // What the test command makes on a fresh clone is not in the tree.
        let made: Vec<&str> = include_str!("../.gitignore")
            .lines()
            .filter(|l| l.starts_with('/'))
            .map(|l| l.trim_start_matches('/'))
            .collect();
        let mut named = 0;
        for (page, text) in pages {
            for (at, _) in text.match_indices('`') {
                let rest = &text[at + 1..];
                let Some(end) = rest.find('`') else { break };
                let path = &rest[..end];
                // Paths below src/ are often named without it.
                let under_src = ["service/", "store/", "http/", "domain/"]
                    .iter()
                    .any(|dir| path.starts_with(dir));
                let is_source = under_src
                    || [
                        "src/",
                        "tests/",
                        "examples/",
                        "benches/",
                        "scripts/",
                        "web/",
                    ]
                    .iter()
                    .any(|dir| path.starts_with(dir));
                if is_source
                    && !path.contains(|c: char| c.is_whitespace() || "*{}<>…".contains(c))
                    && !made.iter().any(|m| path.starts_with(m))
                {
                    named += 1;
                    let file = path.split(['#', ':']).next().unwrap();
                    let file = if under_src {
                        format!("src/{file}")
                    } else {
                        file.to_string()
                    };
                    assert!(
                        std::path::Path::new(root).join(&file).exists(),
                        "{page} names {path}, which is not there"
                    );
                }
            }
        }
        assert!(
            named > 20,
            "found only {named} paths: is the scan still right?"
        );
    }
}
