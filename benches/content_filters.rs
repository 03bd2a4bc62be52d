//! CPU cost of checking a post against the content filters: a 2,000
//! character post (the longest there is, mixed Chinese and Latin, with
//! spaces and punctuation to strip) against 10,000 terms (the most there
//! may be), none matching, so the whole text is scanned. Beside it, in the
//! same run, its two parts alone: normalising the text, and one automaton
//! scan of text already normalised; and building the automaton from the
//! 10,000 terms, which every instance does when the list changes. And the
//! slowest check: one character outside the quick path (an accented
//! letter) sends the text through the Unicode tables; and the same check
//! with half the terms `hold`, which is two automata to scan.
//!
//! Run: `cargo bench --bench content_filters -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::expect_used)]

use std::hint::black_box;

use aho_corasick::{AhoCorasickBuilder, MatchKind};
use criterion::{criterion_group, criterion_main, Criterion};

use moments::domain::content_filter::{normalize, FilterAction, FilterSet, MAX_FILTERS};

/// A small deterministic generator, so every run checks the same terms.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn pick(&mut self, from: &[char]) -> char {
        from[(self.next() as usize) % from.len()]
    }
}

fn alphabets() -> (Vec<char>, Vec<char>) {
    let cjk: Vec<char> = "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明社"
        .chars()
        .collect();
    let latin: Vec<char> = "abcdefghijklmnopqrstuvwxyz0123456789".chars().collect();
    (cjk, latin)
}

/// 10,000 terms of 2 to 4 characters, Chinese and Latin: the length of
/// the words filters hold.
fn terms(rng: &mut Lcg) -> Vec<String> {
    let (cjk, latin) = alphabets();
    (0..MAX_FILTERS)
        .map(|i| {
            let len = 2 + (rng.next() % 3) as usize;
            let from = if i % 3 == 0 { &latin } else { &cjk };
            // A term starts with a character the post never has, so none
            // matches and every check scans the whole text.
            std::iter::once(if i % 3 == 0 { 'q' } else { '龘' })
                .chain((0..len).map(|_| rng.pick(from)))
                .collect()
        })
        .collect()
}

/// 2,000 characters: Chinese with Latin words, spaces and punctuation.
fn post(rng: &mut Lcg) -> String {
    let (cjk, latin) = alphabets();
    let latin: Vec<char> = latin.into_iter().filter(|c| *c != 'q').collect();
    let mut out = String::new();
    let mut n = 0;
    while n < 2_000 {
        let c = match rng.next() % 10 {
            0 => ' ',
            1 => '，',
            2 | 3 => rng.pick(&latin),
            _ => rng.pick(&cjk),
        };
        out.push(c);
        n += 1;
    }
    out
}

fn benches(c: &mut Criterion) {
    let mut rng = Lcg(20261203);
    let terms = terms(&mut rng);
    let text = post(&mut rng);
    assert_eq!(text.chars().count(), 2_000);
    let rows = || {
        terms
            .iter()
            .enumerate()
            .map(|(i, t)| (i as i64, t.clone(), FilterAction::Reject, "r".to_string()))
    };
    let set = FilterSet::build(rows());
    assert_eq!(set.len(), MAX_FILTERS);
    assert!(set.check(&text).is_none(), "the post must match nothing");
    let normal = normalize(&text);
    let bare = AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostFirst)
        .build(terms.iter().map(|t| normalize(t)))
        .expect("the automaton builds");
    c.bench_function("content_filters/check_2000_chars_10000_terms", |b| {
        b.iter(|| black_box(set.check(black_box(&text))))
    });
    // Half `hold`, half `reject`: one automaton each, so a clean text is
    // scanned twice (normalised once).
    let mixed = FilterSet::build(terms.iter().enumerate().map(|(i, t)| {
        let action = if i % 2 == 0 {
            FilterAction::Reject
        } else {
            FilterAction::Hold
        };
        (i as i64, t.clone(), action, "r".to_string())
    }));
    assert!(mixed.check(&text).is_none());
    c.bench_function(
        "content_filters/check_2000_chars_10000_terms_half_hold",
        |b| b.iter(|| black_box(mixed.check(black_box(&text)))),
    );
    // One accented letter sends the whole text through the Unicode tables:
    // the slowest a check gets.
    let accented = format!("é{}", text.chars().skip(1).collect::<String>());
    assert!(set.check(&accented).is_none());
    c.bench_function("content_filters/check_2000_chars_through_the_tables", |b| {
        b.iter(|| black_box(set.check(black_box(&accented))))
    });
    c.bench_function("content_filters/normalize_2000_chars", |b| {
        b.iter(|| black_box(normalize(black_box(&text))))
    });
    c.bench_function("content_filters/scan_normalized_10000_terms", |b| {
        b.iter(|| black_box(bare.find(black_box(normal.as_str()))))
    });
    c.bench_function("content_filters/build_10000_terms", |b| {
        b.iter(|| black_box(FilterSet::build(rows())))
    });
}

criterion_group!(content_filters, benches);
criterion_main!(content_filters);
