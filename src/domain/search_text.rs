//! How text is cut into the terms search matches, the same for a post's
//! content when it is indexed, for a query, and for marking the matched
//! words in an answer, whichever engine holds the index.
//!
//! - Chinese is cut by a dictionary (jieba's, about 350,000 words): a
//!   text is indexed in search mode (each long word and the dictionary
//!   words inside it: 中华人民共和国 is found by 人民 and by 共和国), a
//!   query in the plain mode (one cut per word), so 西湖 finds
//!   我们今天去西湖划船. Unknown runs of characters are cut into single
//!   characters, on both sides alike (no guessing model whose guess could
//!   differ between a text and a query).
//! - Other scripts: words of letters and digits, lowercased, accents
//!   dropped, English words stemmed (Snowball), so "Running" finds "run".
//! - Full-width letters and digits (ＡＢＣ１２３), ligatures and other
//!   compatibility forms are folded to their plain forms (NFKC) first.
//! - A post's and a query's traditional characters are folded to
//!   simplified ones (`fast2s`: a static table of one character for one,
//!   with a few pairs decided by their neighbour), before the dictionary
//!   cuts them, so 我們去西湖划船 is found by 我们 and 西湖 by 西湖.
//!   Each maps a three-byte character to a three-byte one, so a folded
//!   text keeps its offsets. Names are folded so too (`name_key`), each
//!   character alone, so that a prefix's key is a prefix of the name's.
//! - Punctuation, emoji and symbols separate words and are not terms.
//!
//! Every term keeps where it came from in the original text (byte
//! offsets), which is how an answer marks the words that matched.

use std::sync::OnceLock;

use super::cursor::MAX_NAME_KEY_BYTES;

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Which cutting and folding made an index's words. Raised whenever
/// `terms` would give a stored text other terms (a new fold, another
/// dictionary), since a query is cut by this version's rules and would
/// miss posts indexed by the older ones: the embedded index is made again
/// at open, an OpenSearch index is refused until it is rebuilt.
/// 2: traditional characters folded to simplified.
pub const WORDS_VERSION: u32 = 2;

/// Which folding made a stored name key (`name_key`). Raised whenever
/// `name_key` would key a stored name otherwise, since a prefix is keyed
/// by this version's rules and would miss names keyed by older ones: the
/// stores key every account again at start-up (the embedded store's
/// table is named with it, MongoDB's accounts carry it beside the key).
/// 2: traditional characters folded to simplified.
pub const NAME_KEY_VERSION: u32 = 2;

/// A word as search matches it, and where it stands in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The folded form: what the index holds and a query looks for.
    pub text: String,
    /// Byte offsets into the original text, `start..end`.
    pub start: usize,
    pub end: usize,
}

/// Whether a text is being indexed (every dictionary word inside a long
/// one too) or asked for (one cut per word).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    Indexing,
    Querying,
}

fn dictionary() -> &'static jieba_rs::Jieba {
    static JIEBA: OnceLock<jieba_rs::Jieba> = OnceLock::new();
    JIEBA.get_or_init(jieba_rs::Jieba::new)
}

fn stemmer() -> &'static rust_stemmers::Stemmer {
    static STEMMER: OnceLock<rust_stemmers::Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English))
}

/// Loads the dictionary and the traditional-to-simplified table now
/// rather than on the first search or post (a few dozen milliseconds and
/// about 20 MB).
pub fn warm_up() {
    let _ = dictionary();
    let _ = stemmer();
    let _ = fast2s::convert("們");
}

/// The text folded character by character (compatibility forms to plain
/// ones, accents dropped, lowercase), and, when asked for, for each byte
/// of the folded text the original character it came from (its start and
/// end).
struct Folded {
    text: String,
    origin: Vec<(usize, usize)>,
}

/// Whether `fold` keeps where each folded byte came from: an index keeps
/// no offsets, and they are sixteen bytes for each byte of text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    Kept,
    Dropped,
}

fn fold(text: &str, origin: Origin) -> Folded {
    let mut folded = Folded {
        text: String::with_capacity(text.len()),
        origin: match origin {
            Origin::Kept => Vec::with_capacity(text.len()),
            Origin::Dropped => Vec::new(),
        },
    };
    for (start, c) in text.char_indices() {
        let end = start + c.len_utf8();
        let mut push = |out: char| {
            let before = folded.text.len();
            folded.text.push(out);
            if origin == Origin::Kept {
                folded.origin.extend(std::iter::repeat_n(
                    (start, end),
                    folded.text.len() - before,
                ));
            }
        };
        if c.is_ascii() {
            push(c.to_ascii_lowercase());
            continue;
        }
        if is_unified_han(c) {
            push(c);
            continue;
        }
        for plain in std::iter::once(c).nfkd().filter(|d| !is_combining_mark(*d)) {
            for composed in std::iter::once(plain).nfkc() {
                for lower in composed.to_lowercase() {
                    push(lower);
                }
            }
        }
    }
    folded
}

/// A CJK unified ideograph of the common blocks: most of a Chinese text,
/// and its own folded form (no decomposition, no case, no mark), so
/// `fold` keeps it as it is without asking the normalization tables.
/// Compatibility ideographs (U+F900 on, U+2F800 on) decompose and are
/// not among them.
fn is_unified_han(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{20000}'..='\u{2A6DF}')
}

/// A character of a Chinese word (the CJK ideograph blocks).
fn is_han(c: char) -> bool {
    matches!(c,
        '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{2FA1F}')
}

/// `folded`'s traditional characters as simplified ones, where that
/// keeps every byte where it was (always, with `fast2s`'s table; the
/// check keeps `origin` true whatever a newer table does).
fn simplified(mut folded: Folded) -> Folded {
    // The table maps Chinese characters only.
    if folded.text.is_ascii() {
        return folded;
    }
    let simple = fast2s::convert(&folded.text);
    let aligned = simple.len() == folded.text.len()
        && simple
            .char_indices()
            .map(|(i, _)| i)
            .eq(folded.text.char_indices().map(|(i, _)| i));
    if aligned {
        folded.text = simple;
    }
    folded
}

/// The terms of `text`, in order.
pub fn terms(text: &str, cut: Cut) -> Vec<Term> {
    let folded = simplified(fold(text, Origin::Kept));
    let mut out = Vec::new();
    each_word(&folded.text, cut, |word, start, end| {
        out.push(Term {
            text: word.to_string(),
            start: folded.origin[start].0,
            end: folded.origin[end - 1].1,
        })
    });
    out
}

/// `text`'s terms as an index holds them: what `terms` gives when
/// indexing, each followed by a space, without the offsets (an index
/// keeps none) and without a string made for each. A term is letters and
/// digits or Chinese characters, never a space, so a split at spaces
/// gives the terms back.
pub fn indexed_words(text: &str) -> String {
    let folded = simplified(fold(text, Origin::Dropped));
    let mut out = String::with_capacity(folded.text.len() * 2);
    each_word(&folded.text, Cut::Indexing, |word, _, _| {
        out.push_str(word);
        out.push(' ');
    });
    out
}

/// Each word of `folded` in order, with its byte range in it.
fn each_word(folded: &str, cut: Cut, mut word: impl FnMut(&str, usize, usize)) {
    // Runs of Chinese go to the dictionary; runs of other letters and
    // digits are words; everything else only separates.
    let mut chars = folded.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let han = is_han(c);
        if !han && !c.is_alphanumeric() {
            continue;
        }
        let mut end = start + c.len_utf8();
        while let Some(&(i, next)) = chars.peek() {
            let same = if han {
                is_han(next)
            } else {
                next.is_alphanumeric() && !is_han(next)
            };
            if !same {
                break;
            }
            end = i + next.len_utf8();
            chars.next();
        }
        let run = &folded[start..end];
        if han {
            let words = match cut {
                Cut::Indexing => dictionary().cut_for_search(run, false),
                Cut::Querying => dictionary().cut(run, false),
            };
            for w in words {
                word(w.word, start + w.byte_start, start + w.byte_end);
            }
        } else {
            word(&stemmer().stem(run), start, end);
        }
    }
}

/// A name as people search matches it by its start: folded as a post's
/// words are (case, accents, full-width forms, traditional characters to
/// simplified), spaces trimmed and runs of them made one, so
/// "ＺＨＡＮＧ  san" and "zhang san" are one key, as are 張三 and 张三, and
/// a prefix typed into a search box is folded the same way before it is
/// compared. Names are not cut into words: 张 finds 张三, 三 does not.
///
/// Each character is folded alone, not by its neighbours as a post's
/// words are (乾 stays 乾 in 乾隆 there): a prefix has no neighbour to
/// read yet, and its key must start the key of every name it starts.
///
/// At most `MAX_NAME_KEY_BYTES` (cut at a character): a nickname of
/// compatibility forms that fold long (ﷺ is eighteen letters) keys by
/// its start, which is what a prefix matches anyway.
pub fn name_key(name: &str) -> String {
    let folded: String = fold(name, Origin::Dropped)
        .text
        .chars()
        .map(|c| {
            if is_han(c) {
                let mut one = [0; 4];
                fast2s::convert(c.encode_utf8(&mut one))
                    .chars()
                    .next()
                    .unwrap_or(c)
            } else {
                c
            }
        })
        .collect();
    let mut key = String::with_capacity(folded.len().min(MAX_NAME_KEY_BYTES));
    for word in folded.split_whitespace() {
        if !key.is_empty() {
            key.push(' ');
        }
        key.push_str(word);
    }
    if key.len() > MAX_NAME_KEY_BYTES {
        let mut end = MAX_NAME_KEY_BYTES;
        while !key.is_char_boundary(end) {
            end -= 1;
        }
        key.truncate(end);
    }
    key
}

/// The first string past every string that starts with `prefix`, in
/// code-point order (which UTF-8's byte order is): the prefix with its
/// last character raised by one. None when nothing is past them (a prefix
/// of the last characters only).
pub fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = match last {
            '\u{D7FF}' => Some('\u{E000}'),
            c => char::from_u32(c as u32 + 1),
        };
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Spans a post's marks name at most: enough to show where the words are,
/// few enough that a post of one word repeated costs no more than any.
pub const MAX_MARKS: usize = 64;

/// The spans of `text` whose terms are among `wanted` (folded terms, as a
/// query's), merged where they overlap, as `start..end` in UTF-16 code
/// units: what a browser's `String.prototype.slice` takes. The first
/// `MAX_MARKS` of them.
pub fn marks(text: &str, wanted: &[String]) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = terms(text, Cut::Indexing)
        .into_iter()
        .filter(|t| wanted.contains(&t.text))
        .map(|t| (t.start, t.end))
        .collect();
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len().min(MAX_MARKS));
    for (start, end) in spans {
        let full = merged.len() == MAX_MARKS;
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ if full => break,
            _ => merged.push((start, end)),
        }
    }
    // Byte offsets to UTF-16 units in one walk of the text: the offsets
    // only grow, so each character is counted once.
    let mut units = 0;
    let mut walked = 0;
    let mut to_units = |byte: usize| {
        units += text[walked..byte].encode_utf16().count();
        walked = byte;
        units
    };
    merged
        .into_iter()
        .map(|(start, end)| {
            let start = to_units(start);
            (start, to_units(end))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str, cut: Cut) -> Vec<String> {
        terms(text, cut).into_iter().map(|t| t.text).collect()
    }

    fn finds(query: &str, text: &str) -> bool {
        let indexed = words(text, Cut::Indexing);
        let asked = words(query, Cut::Querying);
        !asked.is_empty() && asked.iter().all(|w| indexed.contains(w))
    }

    #[test]
    fn a_prefix_ends_where_its_last_character_is_raised() {
        assert_eq!(prefix_end("zha").as_deref(), Some("zhb"));
        assert_eq!(prefix_end("张").as_deref(), Some("弡"));
        assert_eq!(prefix_end("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(prefix_end("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_end("\u{10FFFF}"), None);
        for name in ["zha", "zhang", "zha\u{10FFFF}x"] {
            assert!(name < prefix_end("zha").unwrap().as_str(), "{name}");
        }
        assert!("zhb" >= prefix_end("zha").unwrap().as_str());
    }

    #[test]
    fn names_are_keyed_by_their_folded_start() {
        let cases = [
            ("Zhang San", "zhang san"),
            ("  ＺＨＡＮＧ\t san ", "zhang san"),
            ("Zoë", "zoe"),
            ("张三", "张三"),
            ("🐱 Cat", "🐱 cat"),
            ("   ", ""),
        ];
        for (name, key) in cases {
            assert_eq!(name_key(name), key, "{name:?}");
        }
        assert!(name_key("张三丰").starts_with(&name_key("张")));
        let long = name_key(&"\u{FDFA}".repeat(32));
        assert!(long.len() <= MAX_NAME_KEY_BYTES && long.len() > MAX_NAME_KEY_BYTES - 4);
        assert!(!name_key("张三").starts_with(&name_key("三")));
    }

    #[test]
    fn chinese_is_found_by_the_words_inside_a_sentence() {
        let cases = [
            ("西湖", "我们今天去西湖划船", true),
            ("划船", "我们今天去西湖划船", true),
            ("西湖 划船", "我们今天去西湖划船", true),
            ("人民", "中华人民共和国成立了", true),
            ("共和国", "中华人民共和国成立了", true),
            ("北京", "我们今天去西湖划船", false),
            ("天安门", "我爱北京天安门", true),
            ("咖啡", "周末和朋友在星巴克喝咖啡，很开心！", true),
        ];
        for (query, text, want) in cases {
            assert_eq!(finds(query, text), want, "{query} in {text}");
        }
    }

    #[test]
    fn english_is_folded_and_stemmed() {
        let cases = [
            ("running", "I went for a run this morning", true),
            ("Runs", "Running by the lake", true),
            ("LAKE", "running by the lake", true),
            ("photos", "A photo of the sunset", true),
            ("cafe", "Coffee at the Café de Flore", true),
            ("sunset", "sunrise over the sea", false),
        ];
        for (query, text, want) in cases {
            assert_eq!(finds(query, text), want, "{query} in {text}");
        }
    }

    #[test]
    fn traditional_characters_find_simplified_ones_and_back() {
        let cases = [
            ("我们", "我們今天去西湖划船", true),
            ("我們", "我们今天去西湖划船", true),
            ("西湖 划船", "我們今天去西湖劃船", true),
            ("計劃", "周末的计划", true),
            ("电脑", "新買的電腦到了", true),
            ("北京", "我們今天去西湖劃船", false),
        ];
        for (query, text, want) in cases {
            assert_eq!(finds(query, text), want, "{query} in {text}");
        }
        // The marks are where the traditional words stand in the text.
        let text = "今天和朋友們去西湖劃船";
        let spans = marks(text, &["划船".to_string()]);
        let marked: Vec<String> = spans
            .iter()
            .map(|(a, b)| {
                let units: Vec<u16> = text.encode_utf16().collect();
                String::from_utf16(&units[*a..*b]).unwrap()
            })
            .collect();
        assert_eq!(marked, ["劃船"]);
        // Names are keyed by their simplified characters, each alone, so
        // a prefix's key starts the name's wherever a pair decides.
        assert_eq!(name_key("張三"), name_key("张三"));
        assert_eq!(name_key("劉德華"), "刘德华");
        for name in ["乾隆", "回覆", "計畫"] {
            let first: String = name.chars().take(1).collect();
            assert!(name_key(name).starts_with(&name_key(&first)), "{name}");
        }
    }

    /// What an index is given is what `terms` cuts, word for word, in
    /// every script and whatever separates the words.
    #[test]
    fn indexed_words_are_the_terms_an_index_is_cut_into() {
        let texts = [
            "我们今天去西湖划船, 中华人民共和国",
            "我們去西湖划船 乾隆",
            "Running at the ＣＡＦÉ\u{a0}with ﬁne friends\tagain",
            "今天🎉去West Lake划船🚣‍♀️ so fun!!! 😀",
            "ﷺ ㏂ ⑴ x²  new  lines\n\r",
            "",
            "!!! ...",
        ];
        for text in texts {
            let cut: String = terms(text, Cut::Indexing)
                .into_iter()
                .map(|t| t.text + " ")
                .collect();
            assert_eq!(indexed_words(text), cut, "{text}");
            assert!(indexed_words(text)
                .split_terminator(' ')
                .all(|w| !w.is_empty() && !w.contains(char::is_whitespace)));
        }
        assert!(indexed_words("西湖 lake").starts_with("西湖 lake"));
    }

    /// Traditional characters are folded by a table of Chinese ones only:
    /// ASCII, which skips it, is the same through it.
    #[test]
    fn the_traditional_table_leaves_ascii_alone() {
        let ascii: String = (0u8..128).map(char::from).collect();
        assert_eq!(fast2s::convert(&ascii), ascii);
    }

    /// `fold`'s quick path for unified ideographs gives what the
    /// normalization tables give, for every one of them.
    #[test]
    fn unified_ideographs_fold_to_themselves() {
        let slow = |c: char| -> String {
            std::iter::once(c)
                .nfkd()
                .filter(|d| !is_combining_mark(*d))
                .flat_map(|d| std::iter::once(d).nfkc())
                .flat_map(char::to_lowercase)
                .collect()
        };
        let mut checked = 0;
        for c in ('\u{3400}'..='\u{2A6DF}').filter(|c| is_unified_han(*c)) {
            assert_eq!(slow(c), c.to_string(), "U+{:X}", c as u32);
            assert_eq!(fold(&c.to_string(), Origin::Kept).text, c.to_string());
            checked += 1;
        }
        assert!(checked > 70_000, "{checked}");
        assert!(!is_unified_han('\u{F900}') && slow('\u{F900}') != "\u{F900}");
    }

    #[test]
    fn full_width_forms_are_their_plain_forms() {
        assert!(finds("iphone 15", "新买的ＩＰｈｏｎｅ　１５到了"));
        assert!(finds("ＡＢＣ", "abc"));
    }

    #[test]
    fn emoji_and_mixed_scripts_do_not_break_the_cut() {
        let text = "今天🎉去West Lake划船🚣‍♀️ so fun!!! 😀";
        let found = words(text, Cut::Indexing);
        assert!(found.contains(&"今天".to_string()), "{found:?}");
        assert!(found.contains(&"west".to_string()), "{found:?}");
        assert!(found.contains(&"划船".to_string()), "{found:?}");
        assert!(found.iter().all(|w| !w.contains('🎉')), "{found:?}");
        for term in terms(text, Cut::Indexing) {
            assert!(text.is_char_boundary(term.start) && text.is_char_boundary(term.end));
        }
        assert!(terms("🎉🎉 ！！ ...", Cut::Querying).is_empty());
        assert!(terms("", Cut::Indexing).is_empty());
    }

    #[test]
    fn marks_name_the_matched_words_in_utf16_units() {
        let text = "😀去西湖划船";
        // The emoji is two UTF-16 units; 西湖 is the next two after 去.
        assert_eq!(marks(text, &["西湖".to_string()]), [(3, 5)]);
        let text = "Running and RUNS";
        assert_eq!(marks(text, &["run".to_string()]), [(0, 7), (12, 16)]);
        // Search mode's words inside a longer one mark the longer span once.
        let text = "中华人民共和国";
        assert_eq!(
            marks(text, &["人民".to_string(), "共和国".to_string()]),
            [(2, 7)]
        );
    }

    #[test]
    fn marks_stop_at_their_bound() {
        let text = "a ".repeat(1000);
        let found = marks(&text, &["a".to_string()]);
        assert_eq!(found.len(), MAX_MARKS);
        assert_eq!(
            found[MAX_MARKS - 1],
            (2 * (MAX_MARKS - 1), 2 * MAX_MARKS - 1)
        );
    }

    #[test]
    fn a_term_points_back_at_the_original_text() {
        let text = "ＣＡＦÉ au lait";
        let t = &terms(text, Cut::Indexing)[0];
        assert_eq!(
            (t.text.as_str(), &text[t.start..t.end]),
            ("cafe", "ＣＡＦÉ")
        );
    }
}
