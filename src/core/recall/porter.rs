//! The tokens SQLite's FTS5 tokenizer `porter unicode61` (the profile's
//! full-text indexes) emits, computed in Rust: runs of token characters
//! (ASCII letters and digits; beyond ASCII, what [`super::unicode61`]
//! says, the Unicode 6.1 categories L*, N* and Co, with diacritics
//! continuing a token), folded to lower case without diacritics, each put
//! through the Porter (1980) stemmer as FTS5 applies it (on the token's
//! bytes; tokens under 3 or over 64 bytes pass unchanged).
//!
//! tests/text_index.rs checks it against SQLite's own index, token for
//! token, on generated text, and the codepoint table for every codepoint.

// Exception to the core's panic lints (src/core/mod.rs): the stemmer indexes
// a token's own bytes within bounds it has just checked, as the reference
// algorithm is written; tests/text_index.rs holds it to SQLite token for
// token.
#![allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use super::unicode61::{CLASSES, FOLDS};

/// Tokens longer than this pass through unstemmed (FTS5's limit).
const MAX_STEMMED: usize = 64;

/// What a codepoint is to the tokenizer.
#[derive(Clone, Copy, PartialEq)]
enum Class {
    Separator,
    Token,
    /// Continues a token, never starts one.
    Diacritic,
}

fn class(c: char) -> Class {
    if c.is_ascii() {
        return if c.is_ascii_alphanumeric() { Class::Token } else { Class::Separator };
    }
    let c = c as u32;
    let i = CLASSES.partition_point(|&(_, last, _)| last < c);
    match CLASSES.get(i) {
        Some(&(first, _, k)) if first <= c => {
            if k == 1 {
                Class::Token
            } else {
                Class::Diacritic
            }
        }
        _ => Class::Separator,
    }
}

/// The codepoint a token character or diacritic folds to; `None` when
/// folding drops it.
fn fold(c: char) -> Option<char> {
    if c.is_ascii() {
        return Some(c.to_ascii_lowercase());
    }
    match FOLDS.binary_search_by_key(&(c as u32), |&(k, _)| k) {
        Ok(i) => char::from_u32(FOLDS[i].1).filter(|_| FOLDS[i].1 != 0),
        Err(_) => Some(c),
    }
}

/// Calls `f` with each token of `text` (folded and stemmed), in order,
/// and returns how many there were.
pub fn tokens(text: &str, mut f: impl FnMut(&[u8])) -> usize {
    let mut buf: Vec<u8> = Vec::with_capacity(32);
    let mut count = 0;
    let mut emit = |buf: &mut Vec<u8>| {
        stem(buf);
        f(buf);
        buf.clear();
        count += 1;
    };
    if text.is_ascii() {
        for &b in text.as_bytes() {
            if b.is_ascii_alphanumeric() {
                buf.push(b.to_ascii_lowercase());
            } else if !buf.is_empty() {
                emit(&mut buf);
            }
        }
        if !buf.is_empty() {
            emit(&mut buf);
        }
        return count;
    }
    let mut in_token = false;
    let mut utf8 = [0u8; 4];
    for c in text.chars() {
        let kept = match class(c) {
            Class::Token => true,
            Class::Diacritic => in_token,
            Class::Separator => false,
        };
        if kept {
            in_token = true;
            if let Some(x) = fold(c) {
                buf.extend_from_slice(x.encode_utf8(&mut utf8).as_bytes());
            }
        } else if in_token {
            in_token = false;
            emit(&mut buf);
        }
    }
    if in_token {
        emit(&mut buf);
    }
    count
}

/// Stems one lowercase token in place, as FTS5's porter tokenizer does.
pub fn stem(w: &mut Vec<u8>) {
    if w.len() < 3 || w.len() > MAX_STEMMED {
        return;
    }
    step_1a(w);
    if step_1b(w) && !step_1b2(w) {
        let n = w.len();
        let c = w[n - 1];
        if !is_vowel(c, false) && c != b'l' && c != b's' && c != b'z' && n >= 2 && c == w[n - 2] {
            w.truncate(n - 1);
        } else if m_eq1(w) && o_star(w) {
            w.push(b'e');
        }
    }
    // Step 1c.
    let n = w.len();
    if n > 0 && w[n - 1] == b'y' && has_vowel(&w[..n - 1]) {
        w[n - 1] = b'i';
    }
    apply(w, STEP_2, m_gt0);
    apply(w, STEP_3, m_gt0);
    step_4(w);
    // Step 5a.
    let n = w.len();
    if n > 0 && w[n - 1] == b'e' {
        let stem = &w[..n - 1];
        if m_gt1(stem) || (m_eq1(stem) && !o_star(stem)) {
            w.truncate(n - 1);
        }
    }
    // Step 5b.
    let n = w.len();
    if n > 1 && w[n - 1] == b'l' && w[n - 2] == b'l' && m_gt1(&w[..n - 1]) {
        w.truncate(n - 1);
    }
}

fn is_vowel(c: u8, y_is_vowel: bool) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u') || (y_is_vowel && c == b'y')
}

/// Skips one vowel run then one consonant run of `s` (a "VC"), with the
/// letter before `s` a consonant or not; returns where it ended, or 0
/// when `s` has no complete VC.
fn gobble_vc(s: &[u8], prev_consonant: bool) -> usize {
    let mut consonant = prev_consonant;
    let mut i = 0;
    while i < s.len() {
        consonant = !is_vowel(s[i], consonant);
        if !consonant {
            break;
        }
        i += 1;
    }
    i += 1;
    while i < s.len() {
        consonant = !is_vowel(s[i], consonant);
        if consonant {
            return i + 1;
        }
        i += 1;
    }
    0
}

/// m > 0.
fn m_gt0(s: &[u8]) -> bool {
    gobble_vc(s, false) != 0
}

/// m > 1.
fn m_gt1(s: &[u8]) -> bool {
    let n = gobble_vc(s, false);
    n != 0 && gobble_vc(&s[n..], true) != 0
}

/// m = 1.
fn m_eq1(s: &[u8]) -> bool {
    let n = gobble_vc(s, false);
    n != 0 && gobble_vc(&s[n..], true) == 0
}

/// *o: ends consonant-vowel-consonant, the last not w, x or y.
fn o_star(s: &[u8]) -> bool {
    match s.last() {
        None | Some(b'w' | b'x' | b'y') => false,
        Some(_) => {
            let mut mask = 0u32;
            let mut consonant = false;
            for &c in s {
                consonant = !is_vowel(c, consonant);
                mask = (mask << 1) + consonant as u32;
            }
            mask & 7 == 5
        }
    }
}

/// m > 1 and the stem ends in s or t.
fn m_gt1_s_or_t(s: &[u8]) -> bool {
    matches!(s.last(), Some(b's' | b't')) && m_gt1(s)
}

/// *v*: the stem has a vowel (y after a letter counts).
fn has_vowel(s: &[u8]) -> bool {
    s.iter().enumerate().any(|(i, &c)| is_vowel(c, i > 0))
}

fn step_1a(w: &mut Vec<u8>) {
    let n = w.len();
    if w[n - 1] != b's' {
        return;
    }
    if w[n - 2] == b'e' {
        if (n > 4 && w[n - 4] == b's' && w[n - 3] == b's') || (n > 3 && w[n - 3] == b'i') {
            w.truncate(n - 2);
        } else {
            w.truncate(n - 1);
        }
    } else if w[n - 2] != b's' {
        w.truncate(n - 1);
    }
}

/// Step 1b: "eed" (m > 0) to "ee"; "ed" and "ing" (the stem has a vowel)
/// removed. True when "ed" or "ing" went.
fn step_1b(w: &mut Vec<u8>) -> bool {
    let n = w.len();
    if n > 3 && w.ends_with(b"eed") {
        if m_gt0(&w[..n - 3]) {
            w.truncate(n - 1);
        }
        false
    } else if n > 2 && w.ends_with(b"ed") {
        if has_vowel(&w[..n - 2]) {
            w.truncate(n - 2);
            return true;
        }
        false
    } else if n > 3 && w.ends_with(b"ing") {
        if has_vowel(&w[..n - 3]) {
            w.truncate(n - 3);
            return true;
        }
        false
    } else {
        false
    }
}

/// After step 1b: "at", "bl", "iz" get an "e". True when one did.
fn step_1b2(w: &mut Vec<u8>) -> bool {
    let n = w.len();
    for suffix in [&b"at"[..], b"bl", b"iz"] {
        if n > 2 && w.ends_with(suffix) {
            w.push(b'e');
            return true;
        }
    }
    false
}

/// (suffix, replacement) rules, tried in order; the first suffix that
/// ends the word decides (its condition holding or not).
type Rules = &'static [(&'static [u8], &'static [u8])];

const STEP_2: Rules = &[
    (b"ational", b"ate"),
    (b"tional", b"tion"),
    (b"enci", b"ence"),
    (b"anci", b"ance"),
    (b"izer", b"ize"),
    (b"logi", b"log"),
    (b"bli", b"ble"),
    (b"alli", b"al"),
    (b"entli", b"ent"),
    (b"eli", b"e"),
    (b"ousli", b"ous"),
    (b"ization", b"ize"),
    (b"ation", b"ate"),
    (b"ator", b"ate"),
    (b"alism", b"al"),
    (b"iveness", b"ive"),
    (b"fulness", b"ful"),
    (b"ousness", b"ous"),
    (b"aliti", b"al"),
    (b"iviti", b"ive"),
    (b"biliti", b"ble"),
];

const STEP_3: Rules = &[(b"ical", b"ic"), (b"ness", b""), (b"icate", b"ic"), (b"iciti", b"ic"), (b"ful", b""), (b"ative", b""), (b"alize", b"al")];

const STEP_4: &[&[u8]] = &[
    b"al", b"ance", b"ence", b"er", b"ic", b"able", b"ible", b"ant", b"ement", b"ment", b"ent", b"ion", b"ou", b"ism", b"ate", b"iti", b"ous", b"ive", b"ize",
];

/// FTS5 groups each step's suffixes by their next-to-last letter and
/// tries, within the group of the word's next-to-last letter, the
/// suffixes in order: the first that ends the word (strictly shorter than
/// it) decides. Suffixes of different groups never both match a word, so
/// trying the whole list in group order is the same.
fn apply(w: &mut Vec<u8>, rules: Rules, cond: fn(&[u8]) -> bool) {
    let n = w.len();
    if n < 2 {
        return;
    }
    let penultimate = w[n - 2];
    if let Some((suffix, out)) = rules.iter().find(|(s, _)| s[s.len() - 2] == penultimate && n > s.len() && w.ends_with(s)) {
        let stem = n - suffix.len();
        if cond(&w[..stem]) {
            w.truncate(stem);
            w.extend_from_slice(out);
        }
    }
}

fn step_4(w: &mut Vec<u8>) {
    let n = w.len();
    if n < 2 {
        return;
    }
    let penultimate = w[n - 2];
    if let Some(suffix) = STEP_4.iter().find(|s| s[s.len() - 2] == penultimate && n > s.len() && w.ends_with(s)) {
        let stem = n - suffix.len();
        let ok = if *suffix == b"ion" { m_gt1_s_or_t(&w[..stem]) } else { m_gt1(&w[..stem]) };
        if ok {
            w.truncate(stem);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stemmed(w: &str) -> String {
        let mut b = w.as_bytes().to_vec();
        stem(&mut b);
        String::from_utf8(b).unwrap()
    }

    #[test]
    fn test_porter_stems_the_classic_examples() {
        for (w, s) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("hopping", "hop"),
            ("falling", "fall"),
            ("filing", "file"),
            ("happy", "happi"),
            ("relational", "relat"),
            ("generalization", "gener"),
            ("adjustment", "adjust"),
            ("controlling", "control"),
            ("2023", "2023"),
            ("am", "am"),
        ] {
            assert_eq!(stemmed(w), s, "{w}");
        }
    }

    #[test]
    fn test_tokens_split_on_separators_and_fold_case_and_diacritics() {
        let mut out = Vec::new();
        assert_eq!(tokens("Don't STOP_running, 3-D!", |t| out.push(String::from_utf8(t.to_vec()).unwrap())), 6);
        assert_eq!(out, vec!["don", "t", "stop", "run", "3", "d"]);
        out.clear();
        assert_eq!(tokens("Ça va — CAFÉS 🎉 naïve", |t| out.push(String::from_utf8(t.to_vec()).unwrap())), 4);
        assert_eq!(out, vec!["ca", "va", "cafe", "naiv"]);
    }
}
