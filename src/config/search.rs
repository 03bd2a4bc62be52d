//! Search (`MOMENTS_OPENSEARCH_*`): which engine holds the search index.
//! Unset, an index in the data directory; set, an OpenSearch cluster that
//! every instance shares.

use super::*;

pub(super) const VARIABLES: &[Variable] = &[
    Variable {
        name: "MOMENTS_OPENSEARCH_URL",
        default: DefaultValue::Described("unset: an index under MOMENTS_DATA_DIR/search"),
        allowed: "an http:// or https:// URL",
        meaning: "an OpenSearch cluster to hold the search index, shared by every instance; \
                  while it is down, searches answer 503 and indexing catches up after",
        echo: Echo::Credentials,
        apply: |d, v| {
            d.settings.search.opensearch_url = Some(
                url(v, &["http://", "https://"])?
                    .trim_end_matches('/')
                    .to_string(),
            );
            Ok(())
        },
    },
    Variable {
        name: "MOMENTS_OPENSEARCH_INDEX",
        default: DefaultValue::Literal("moments-posts"),
        allowed: "1 to 100 lower-case letters, digits, - and _, starting with a letter",
        meaning: "the OpenSearch index of the posts (and, beside it, <name>-mark: how far \
                  indexing got)",
        echo: Echo::Plain,
        apply: |d, v| {
            let v = v.trim();
            let ok = (1..=100).contains(&v.len())
                && v.starts_with(|c: char| c.is_ascii_lowercase())
                && v.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
            if !ok {
                return Err(Refused::default());
            }
            d.settings.search.opensearch_index = v.to_string();
            Ok(())
        },
    },
];
