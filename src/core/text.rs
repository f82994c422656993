//! Small text utilities shared by the rule-based stages, the local
//! embedder and query analysis: tokenizing, stop words, a light stemmer.

/// Lowercased alphanumeric tokens. Apostrophes inside a word are dropped
/// ("don't" -> "dont"), except that a possessive "'s" goes with its
/// apostrophe ("Caroline's" -> "caroline"), so a name in the possessive
/// matches the name, as it does in the FTS index (where the apostrophe
/// separates tokens and "s" is a token of its own).
pub fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    any_token(s, |t| {
        out.push(t.to_string());
        false
    });
    out
}

/// Whether `f` holds for one of the [`tokens`] of `s`, read in order
/// without building the list: stops at the first token it holds for.
pub fn any_token(s: &str, f: impl FnMut(&str) -> bool) -> bool {
    if s.is_ascii() {
        // The common case, byte by byte: no decoding, no case tables.
        split_tokens(s.as_bytes(), f)
    } else {
        split_tokens(&s.chars().collect::<Vec<char>>(), f)
    }
}

/// A unit of text [`tokens`] reads: a byte of ASCII text, or a character.
trait Unit: Copy {
    fn is_alnum(self) -> bool;
    fn is_apostrophe(self) -> bool;
    fn is_s(self) -> bool;
    fn push_lower(self, to: &mut String);
}

impl Unit for u8 {
    fn is_alnum(self) -> bool {
        self.is_ascii_alphanumeric()
    }
    fn is_apostrophe(self) -> bool {
        self == b'\''
    }
    fn is_s(self) -> bool {
        matches!(self, b's' | b'S')
    }
    fn push_lower(self, to: &mut String) {
        to.push(self.to_ascii_lowercase() as char);
    }
}

impl Unit for char {
    fn is_alnum(self) -> bool {
        self.is_alphanumeric()
    }
    fn is_apostrophe(self) -> bool {
        matches!(self, '\'' | '’')
    }
    fn is_s(self) -> bool {
        matches!(self, 's' | 'S')
    }
    fn push_lower(self, to: &mut String) {
        to.extend(self.to_lowercase());
    }
}

fn split_tokens<U: Unit>(units: &[U], mut f: impl FnMut(&str) -> bool) -> bool {
    let mut cur = String::new();
    let mut rest = units;
    while let Some((&c, tail)) = rest.split_first() {
        rest = tail;
        if c.is_alnum() {
            c.push_lower(&mut cur);
        } else if c.is_apostrophe() {
            if let Some((&n, after)) = tail.split_first() {
                let possessive = !cur.is_empty() && n.is_s() && after.first().is_none_or(|m| !m.is_alnum());
                if possessive && !is_stop(&cur) {
                    // "Caroline's" -> "caroline"; "it's", "that's" keep their
                    // contracted forms ("its", "thats"), which are stop words.
                    rest = after;
                    continue;
                }
            }
        } else if !cur.is_empty() {
            if f(&cur) {
                return true;
            }
            cur.clear();
        }
    }
    !cur.is_empty() && f(&cur)
}

/// The stop words, alphabetical (for the reader).
const STOP: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "before", "being", "both", "but", "by", "can",
    "could", "d", "did", "do", "does", "doing", "done", "dont", "each", "few", "for", "from", "get", "got", "had", "has", "have", "having", "he", "her",
    "here", "hers", "hey", "hi", "him", "his", "how", "i", "if", "im", "in", "into", "is", "it", "its", "ive", "just", "let", "lets", "ll", "lot", "m", "many",
    "me", "more", "most", "much", "my", "myself", "no", "nor", "not", "now", "of", "off", "oh", "on", "once", "only", "or", "other", "our", "ours", "out",
    "over", "own", "re", "really", "s", "same", "she", "should", "so", "some", "such", "t", "than", "that", "thats", "the", "their", "theirs", "them", "then",
    "there", "these", "they", "this", "those", "to", "too", "under", "until", "up", "us", "ve", "very", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "would", "wow", "yeah", "you", "your", "youre", "yours", "yourself",
];

/// Whether `w` (lowercase) is a stop word: one hash lookup, the test of
/// every token of every text.
pub fn is_stop(w: &str) -> bool {
    static SET: std::sync::OnceLock<rustc_hash::FxHashSet<&'static str>> = std::sync::OnceLock::new();
    SET.get_or_init(|| STOP.iter().copied().collect()).contains(w)
}

/// Content words: tokens that are not stop words.
pub fn content_words(s: &str) -> Vec<String> {
    tokens(s).into_iter().filter(|w| !is_stop(w)).collect()
}

/// The letters of Chinese, Japanese and Korean (Han, Hiragana, Katakana,
/// Hangul), as ranges of code points: what [`is_cjk_letter`] holds and
/// [`cjk_glob`] matches (with others). The first [`UNSPACED_CJK_RANGES`] are
/// written without spaces between words; Korean is spaced, but a word
/// carries its particles ("서울에", "in Seoul"), so its letters too are
/// read in pairs.
const CJK_RANGES: &[(char, char)] = &[
    ('\u{3040}', '\u{30FF}'),   // Hiragana, Katakana
    ('\u{31F0}', '\u{31FF}'),   // Katakana extensions
    ('\u{3400}', '\u{4DBF}'),   // Han, extension A
    ('\u{4E00}', '\u{9FFF}'),   // Han
    ('\u{F900}', '\u{FAFF}'),   // Han compatibility
    ('\u{20000}', '\u{2FA1F}'), // Han, supplementary planes
    ('\u{1100}', '\u{11FF}'),   // Hangul Jamo
    ('\u{3130}', '\u{318F}'),   // Hangul compatibility Jamo
    ('\u{AC00}', '\u{D7AF}'),   // Hangul syllables
];

/// How many of [`CJK_RANGES`], from the first, are letters of a script
/// written without spaces between words (Chinese and Japanese).
const UNSPACED_CJK_RANGES: usize = 6;

/// Whether `c` is a letter of a script written without spaces between
/// words (Chinese and Japanese, of [`is_cjk_letter`]'s; Thai, Lao, Myanmar,
/// Khmer): a run of them is one [`tokens`] token, however many words it
/// holds.
pub fn is_unspaced_letter(c: char) -> bool {
    CJK_RANGES.iter().take(UNSPACED_CJK_RANGES).any(|&(lo, hi)| (lo..=hi).contains(&c))
        || matches!(c,
            '\u{0E00}'..='\u{0EFF}' // Thai, Lao
            | '\u{1000}'..='\u{109F}' // Myanmar
            | '\u{1780}'..='\u{17FF}' // Khmer
        )
}

/// Whether `c` is a letter of Chinese, Japanese or Korean (Han, Hiragana,
/// Katakana, Hangul): the letters [`index_form`] reads in pairs.
pub fn is_cjk_letter(c: char) -> bool {
    CJK_RANGES.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// Ranges of code points covering [`CJK_RANGES`] in fewer, for
/// [`cjk_glob`]: a Durable Object's SQLite refuses a `GLOB` pattern over
/// [`MAX_GLOB_PATTERN_BYTES`] ("pattern too complex"), and the ranges
/// written out take 69. They hold more than those letters (Bopomofo,
/// enclosed letters, Yi, a private use area): a text with only such
/// others is read by [`index_form`], which leaves it as it is.
const CJK_GLOB_RANGES: &[(char, char)] = &[
    ('\u{1100}', '\u{11FF}'),   // Hangul Jamo
    ('\u{3040}', '\u{9FFF}'),   // Hiragana to Han
    ('\u{AC00}', '\u{FAFF}'),   // Hangul syllables to Han compatibility
    ('\u{20000}', '\u{2FA1F}'), // Han, supplementary planes
];

/// The longest `LIKE` or `GLOB` pattern a Durable Object's SQLite takes,
/// in bytes (`SQLITE_LIMIT_LIKE_PATTERN_LENGTH`; native tests set it).
pub const MAX_GLOB_PATTERN_BYTES: usize = 50;

/// A SQL `GLOB` pattern matching every text with a letter
/// [`is_cjk_letter`] holds (and some others, [`CJK_GLOB_RANGES`]): the
/// rows whose full-text rows are written by [`index_form`].
pub fn cjk_glob() -> &'static str {
    static GLOB: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    GLOB.get_or_init(|| {
        let ranges: String = CJK_GLOB_RANGES.iter().map(|&(lo, hi)| format!("{lo}-{hi}")).collect();
        format!("*[{ranges}]*")
    })
}

/// `s` as the full-text indexes read it: each run of Chinese, Japanese or
/// Korean letters ([`is_cjk_letter`]) as its overlapping pairs of letters,
/// each a word ("我住在上海" -> "我住 住在 在上 上海"; "서울에" -> "서울 울에";
/// a letter alone stays one), set apart from what surrounds it. The
/// tokenizer (FTS5's `unicode61`, and [`crate::core::recall::unicode61`]
/// mirroring it) reads such a run as one word, so "上海" found no text
/// that says "我住在上海" (written without spaces between words), nor
/// "서울" one that says "서울에" (a Korean word with its particle). A text
/// with no such letter is `s` itself.
///
/// What it does not do: tell words apart (a pair may straddle two, and
/// is then a word no question asks for), or read Thai, Lao, Khmer or
/// Myanmar, whose letters combine with marks the tokenizer splits on.
pub fn index_form(s: &str) -> std::borrow::Cow<'_, str> {
    if s.is_ascii() || !s.chars().any(is_cjk_letter) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len().saturating_mul(2));
    let mut run: Vec<char> = Vec::new();
    let flush = |run: &mut Vec<char>, out: &mut String| {
        if run.is_empty() {
            return;
        }
        out.push(' ');
        match run.as_slice() {
            [one] => out.push(*one),
            letters => {
                for (i, pair) in letters.windows(2).enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.extend(pair);
                }
            }
        }
        out.push(' ');
        run.clear();
    };
    for c in s.chars() {
        if is_cjk_letter(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    std::borrow::Cow::Owned(out)
}

/// Letters of an unspaced script ([`is_unspaced_letter`]) counted as one
/// word in this many: about the length of a word of Chinese or Japanese.
pub const UNSPACED_LETTERS_PER_WORD: usize = 2;

/// How many words the token `w` holds: one for each run of other letters
/// in it ("iphone"), and for each run of an unspaced script its letters
/// over [`UNSPACED_LETTERS_PER_WORD`], rounded up ("iphone买了": two).
pub fn words_in_token(w: &str) -> usize {
    if w.is_ascii() {
        return 1;
    }
    let mut words = 0usize;
    let mut run: Option<(bool, usize)> = None;
    for c in w.chars() {
        let unspaced = is_unspaced_letter(c);
        run = match run {
            Some((kind, n)) if kind == unspaced => Some((kind, n.saturating_add(1))),
            Some(done) => {
                words = words.saturating_add(run_words(done));
                Some((unspaced, 1))
            }
            None => Some((unspaced, 1)),
        };
    }
    words.saturating_add(run.map_or(0, run_words)).max(1)
}

/// The words of one run of a token: an unspaced script's letters over
/// [`UNSPACED_LETTERS_PER_WORD`], any other run one word.
fn run_words((unspaced, letters): (bool, usize)) -> usize {
    if unspaced {
        letters.div_ceil(UNSPACED_LETTERS_PER_WORD)
    } else {
        1
    }
}

/// Jaccard similarity of content stems ([`statement_stems`]) from which
/// two statements of one value ([`statement_value`]) say the same thing
/// ([`Statement::says_the_same`]). Swept on the LoCoMo development split as
/// consolidation's merge threshold (`docs/bench/consolidation.txt`): at 0.6
/// merges cost recall@10 0.018, at 0.7 0.010, at 0.8 0.003 (when first
/// chosen). Swept again after later full-text changes (the whole run's
/// cost: 0.8 0.007, 0.85 0.003, 0.9 and 0.95 0.004, no merges 0.004); a
/// merged memory cites every source of its group, and a looser match
/// merges statements a question tells apart.
pub const DUPLICATE_SIMILARITY: f64 = 0.85;

/// The stems of a statement's content words, numbers left out (they are
/// its value: [`statement_value`]).
pub fn statement_stems(s: &str) -> rustc_hash::FxHashSet<String> {
    content_words(s).iter().filter(|w| !w.bytes().any(|b| b.is_ascii_digit())).map(|w| stem(w)).collect()
}

/// Words that turn a statement around. "not", "no", "nor" and "dont"
/// are stop words, so [`statement_stems`] does not see them: "likes spicy
/// food" and "does not like spicy food" have one set of stems.
const NEGATORS: [&str; 30] = [
    "not", "no", "never", "nor", "neither", "none", "nobody", "nothing", "nowhere", "cannot", "dont", "doesnt", "didnt", "isnt", "wasnt", "arent", "werent",
    "wont", "cant", "couldnt", "shouldnt", "wouldnt", "hasnt", "havent", "hadnt", "mustnt", "neednt", "aint", "without", "nt",
];

/// Stop words that still say which way, when, how much or who: two
/// statements whose stems match but that hold different ones of these
/// ("walks the dog before work" / "after work", "he" / "she", "all" /
/// "some") say different things.
const BEARINGS: [&str; 30] = [
    "after", "again", "all", "any", "before", "both", "each", "few", "he", "her", "hers", "him", "his", "in", "into", "many", "more", "most", "much", "off",
    "on", "once", "only", "out", "over", "she", "some", "too", "under", "up",
];

/// What a statement asserts beyond its words' stems: its numbers (sorted,
/// each once), how many [`NEGATORS`] turn it around, and which
/// [`BEARINGS`] it holds. Two statements alike in stems but not in this
/// are one matter with two values ("The limit is 100" / "The limit is
/// 200", "The user likes tea" / "The user does not like tea", "... no cats
/// and no dogs" / "... cats and dogs", "before work" / "after work"),
/// never two wordings of one.
pub fn statement_value(s: &str) -> StatementValue {
    let words = tokens(s);
    let mut numbers: Vec<String> = words.iter().filter(|t| t.bytes().any(|b| b.is_ascii_digit())).cloned().collect();
    numbers.sort();
    numbers.dedup();
    let negators = words.iter().filter(|t| NEGATORS.contains(&t.as_str())).count();
    let mut bearings: Vec<&'static str> = BEARINGS.iter().copied().filter(|b| words.iter().any(|t| t == b)).collect();
    bearings.dedup();
    StatementValue { numbers, negators, bearings }
}

/// What [`statement_value`] reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatementValue {
    pub numbers: Vec<String>,
    pub negators: usize,
    pub bearings: Vec<&'static str>,
}

/// |a ∩ b| / |a ∪ b|; 0 for two empty sets.
pub fn jaccard(a: &rustc_hash::FxHashSet<String>, b: &rustc_hash::FxHashSet<String>) -> f64 {
    let inter = a.iter().filter(|w| b.contains(*w)).count();
    let union = a.len().saturating_add(b.len()).saturating_sub(inter);
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

/// A statement as [`Statement::says_the_same`] weighs it, read once to be
/// weighed against many.
#[derive(Clone, Debug)]
pub struct Statement {
    value: StatementValue,
    stems: rustc_hash::FxHashSet<String>,
}

impl Statement {
    pub fn of(s: &str) -> Statement {
        Statement { value: statement_value(s), stems: statement_stems(s) }
    }

    /// Whether two statements say the same thing: their stems overlap by
    /// at least [`DUPLICATE_SIMILARITY`] and they hold one value
    /// ([`statement_value`]). Consolidation merges such memories; a
    /// retried judging does not store one again from the message that
    /// gave the other.
    pub fn says_the_same(&self, other: &Statement) -> bool {
        self.value == other.value && jaccard(&self.stems, &other.stems) >= DUPLICATE_SIMILARITY
    }
}

/// The endings [`stem`] strips, longest first within a family, each with
/// what replaces it.
const STEM_SUFFIXES: [(&str, &str); 21] = [
    ("ational", "ate"),
    ("ization", "ize"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("iveness", "ive"),
    ("ations", "ate"),
    ("ation", "ate"),
    ("ement", ""),
    ("ments", ""),
    ("ment", ""),
    ("ness", ""),
    ("ities", ""),
    ("ity", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ing", ""),
    ("edly", ""),
    ("ed", ""),
    ("ly", ""),
    ("es", ""),
    ("s", ""),
];

/// A light English stemmer (plural, -ing, -ed, -ly, a few derivational
/// endings). Close to Porter where it matters for matching; not exact.
pub fn stem(w: &str) -> String {
    // Tokens come lowercase already: copied, not case-mapped again.
    let mut w = if w.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii()) { w.to_lowercase() } else { w.to_string() };
    if w.len() <= 3 || !w.bytes().all(|b| b.is_ascii_alphabetic()) {
        return w;
    }
    let s = w.as_str();
    for (suf, rep) in STEM_SUFFIXES {
        if let Some(base) = s.strip_suffix(suf) {
            if base.len() >= 3 && !(suf == "s" && (base.ends_with('s') || base.ends_with('u') || base.ends_with('i'))) {
                if suf == "es" && !(base.ends_with("sh") || base.ends_with("ch") || base.ends_with('x') || base.ends_with('s') || base.ends_with('z')) {
                    // "games" -> "game": strip only the s.
                    w.pop();
                    return w;
                }
                let mut out = format!("{base}{rep}");
                // "running" -> "run", "stopped" -> "stop"
                let doubled = matches!(out.as_bytes(), [.., x, y] if x == y && !matches!(y, b'l' | b's' | b'z'));
                if rep.is_empty() && (suf == "ing" || suf == "ed") && doubled {
                    out.pop();
                }
                return out;
            }
        }
    }
    w
}

/// Stemmed content words: [`stem`] of each of [`content_words`].
pub fn stems(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    any_token(s, |t| {
        if !is_stop(t) {
            out.push(stem(t));
        }
        false
    });
    out
}

/// The longest summary made without a model ([`lead`]): of a remembered
/// note, of a consolidation's fold.
pub const SUMMARY_CHARS: usize = 200;

/// A text's lead, as a summary of it: its sentences from the first while
/// they fit in `max` characters (a quarter of them at least); else the
/// words that fit, with an ellipsis. A text of at most `max` characters
/// is its own lead, whole.
pub fn lead(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    for sentence in sentences(s) {
        // Sentences of scripts written without spaces are joined without one.
        let joined = match out.chars().last() {
            None => sentence.clone(),
            Some('。' | '！' | '？') => format!("{out}{sentence}"),
            Some(_) => format!("{out} {sentence}"),
        };
        if joined.chars().count() > max {
            break;
        }
        out = joined;
    }
    // Whole sentences when they fill a quarter of the room at least: a
    // first "sentence" shorter than that is likely an abbreviation cut
    // off ("Prof.", "U.S.") and says too little.
    if out.chars().count() >= max / 4 && !out.is_empty() {
        return out;
    }
    // One sentence past `max`: the words that fit, and an ellipsis; or,
    // when a word too long to fit (a URL, a token) would leave less than
    // half of the room, as much of it as fits.
    let room = max.saturating_sub(1);
    let cut: String = s.chars().take(room).collect();
    let words = match s.chars().nth(room).is_some_and(char::is_whitespace) {
        true => cut.as_str(),
        false => cut.rsplit_once(char::is_whitespace).map_or(cut.as_str(), |(kept, _)| kept),
    };
    let words = if words.chars().count() < room / 2 { cut.as_str() } else { words };
    format!("{}\u{2026}", words.trim_end_matches(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':')))
}

/// Sentences of a text (split on `.`, `!`, `?` followed by space or end,
/// on `。`, `！`, `？` whatever follows, and on newlines), trimmed,
/// non-empty.
pub fn sentences(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == '\n' {
            if !cur.trim().is_empty() {
                out.push(cur.trim().to_string());
            }
            cur.clear();
            continue;
        }
        cur.push(c);
        // The full stops of scripts written without spaces end a sentence
        // whatever follows ("我住在上海。我是工程师。").
        if matches!(c, '。' | '！' | '？') {
            if !cur.trim().is_empty() {
                out.push(cur.trim().to_string());
            }
            cur.clear();
            continue;
        }
        if matches!(c, '.' | '!' | '?') {
            let next = i.checked_add(1).and_then(|j| chars.get(j)).copied();
            let prev_is_digit = i.checked_sub(1).and_then(|j| chars.get(j)).is_some_and(char::is_ascii_digit);
            let next_is_digit = next.is_some_and(|n| n.is_ascii_digit());
            if next.is_none_or(char::is_whitespace) && !(prev_is_digit && next_is_digit) {
                let t = cur.trim();
                // Keep abbreviations like "e.g." and "Dr." attached.
                let last_word = t.rsplit(' ').next().unwrap_or("");
                if !matches!(last_word.to_lowercase().as_str(), "e.g." | "i.e." | "dr." | "mr." | "mrs." | "ms." | "vs." | "etc.") {
                    if !t.is_empty() {
                        out.push(t.to_string());
                    }
                    cur.clear();
                }
            }
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// A constant pattern of this crate, compiled once into `cell`. Every
/// pattern passed here is a literal (or built from literals) that a unit
/// test compiles, so the failure arm cannot be reached from input: it is
/// the one justified `expect` of the core's regexes.
pub fn constant_regex(cell: &'static std::sync::OnceLock<regex::Regex>, pattern: &str) -> &'static regex::Regex {
    built_regex(cell, || pattern.to_string())
}

/// A constant pattern built from literals (`format!` of an alternation
/// of names), compiled once into `cell`: the text is built on the first
/// call only, not each time the pattern is used.
#[allow(clippy::expect_used)]
pub fn built_regex(cell: &'static std::sync::OnceLock<regex::Regex>, build: impl FnOnce() -> String) -> &'static regex::Regex {
    cell.get_or_init(|| regex::Regex::new(&build()).expect("a constant pattern compiles"))
}

/// `text` as a case-insensitive pattern's literals may be looked for in
/// it: lowercased, and the long s (`ſ`, which Unicode case folding takes
/// for `s`, and which is lowercase already) written `s`. (The Kelvin sign,
/// folded to `k`, lowercases to `k`.) Every ASCII letter a `(?i)` pattern
/// matches in `text` is then that letter here.
pub fn case_folded(text: &str) -> String {
    text.to_lowercase().replace('\u{17F}', "s")
}

/// Whether `folded` ([`case_folded`]) holds any of `words`: checked before
/// a pattern every match of which holds one of them, so that a text that
/// cannot match never compiles it. A pattern's first use in an isolate
/// compiles it (a few milliseconds in Wasm), and a first recall or ingest
/// paid that for every pattern it tried (`make bench-first`).
pub fn holds_any(folded: &str, words: &[&str]) -> bool {
    words.iter().any(|w| folded.contains(w))
}

/// `"User / Package Manager"` -> `user.package_manager`. A key longer
/// than the write routes accept ([`crate::core::api::MAX_KEY_CHARS`]) is
/// no topic key: `None`.
pub fn normalize_key(k: &str) -> Option<String> {
    let parts: Vec<String> = k
        .split(['.', '/', ':'])
        .map(|p| {
            p.trim()
                .to_lowercase()
                .chars()
                .map(|c| if c.is_alphanumeric() { c } else { '_' })
                .collect::<String>()
                .split('_')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("_")
        })
        .filter(|p| !p.is_empty())
        .collect();
    let key = parts.join(".");
    (!key.is_empty() && key.chars().count() <= crate::core::api::MAX_KEY_CHARS).then_some(key)
}

/// A caller's topic key is stored as given or refused, never rewritten:
/// it must be in the form keys are compared in (lowercase words joined by
/// `_`, segments by `.`), and its type, when given, must be one keys
/// supersede (a fact or an instruction). Remember and import both run it,
/// so a file cannot store a key remember would refuse.
pub fn check_key_as_given(key: &str, kind: Option<crate::core::model::MemoryType>) -> crate::core::error::Result<()> {
    match normalize_key(key) {
        None => return Err(crate::core::error::Error::invalid(format!("key {} holds no letter or digit", crate::core::api::quoted(key)))),
        Some(normal) if normal != key => {
            return Err(crate::core::error::Error::invalid(format!(
                "key {} is not in its stored form: lowercase words joined by '_', segments by '.' ({} here)",
                crate::core::api::quoted(key),
                crate::core::api::quoted(&normal)
            )))
        }
        Some(_) => {}
    }
    match kind {
        Some(k) if !k.is_keyed() => Err(crate::core::error::Error::invalid(format!(
            "a memory of type {} takes no key (only facts and instructions are superseded by key)",
            crate::core::api::quoted(k.as_str())
        ))),
        _ => Ok(()),
    }
}

/// Whether a message role stands for the person the service remembers
/// for (`user`, `human`).
pub fn is_user_role(role: &str) -> bool {
    matches!(role.trim().to_lowercase().as_str(), "user" | "human")
}

/// Whether a message role is an agent's rather than a person's.
pub fn is_agent_role(role: &str) -> bool {
    matches!(role.trim().to_lowercase().as_str(), "assistant" | "ai" | "agent" | "model" | "bot" | "system" | "tool" | "function" | "developer")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_a_lead_is_whole_sentences_that_fit_or_the_words_that_fit() {
        assert_eq!(lead("Short note.", 200), "Short note.");
        let long = "The user is a data engineer in Lisbon. They maintain the nightly ETL jobs. They prefer PostgreSQL.";
        assert_eq!(lead(long, 80), "The user is a data engineer in Lisbon. They maintain the nightly ETL jobs.");
        assert_eq!(lead(long, 45), "The user is a data engineer in Lisbon.");
        assert_eq!(lead("one two three four five six", 15), "one two three\u{2026}");
        assert!(lead(&"word ".repeat(100), 50).chars().count() <= 50);
        assert_eq!(lead("a", 0), "");
        let rest = "Alvarez agreed to review the grant proposal for the coastal erosion study, provided the budget section is rewritten to separate equipment from travel costs and the timeline is shortened to eighteen months.";
        for abbr in ["Prof.", "U.S.", "The call is at 3 p.m."] {
            let l = lead(&format!("{abbr} {rest}"), SUMMARY_CHARS);
            assert!(l.chars().count() > SUMMARY_CHARS / 2 && l.chars().count() <= SUMMARY_CHARS, "{abbr}: {l}");
        }
        let token = format!("The vault label is {}", "h".repeat(500));
        assert_eq!(lead(&token, 40), format!("The vault label is {}\u{2026}", "h".repeat(20)), "a word too long to fit is cut, not dropped");
        assert_eq!(lead("ééééé ééééé ééééé", 12), "ééééé ééééé\u{2026}", "counted in characters, not bytes");
    }

    #[test]
    fn test_chinese_japanese_and_korean_runs_are_indexed_as_pairs_of_letters() {
        assert_eq!(index_form("我住在上海"), " 我住 住在 在上 上海 ");
        assert_eq!(index_form("I live in 上海, ok"), "I live in  上海 , ok");
        assert_eq!(index_form("v3版本"), "v3 版本 ");
        assert_eq!(index_form("私は東京に住んでいます。"), " 私は は東 東京 京に に住 住ん んで でい いま ます 。");
        assert_eq!(index_form("A股"), "A 股 ");
        assert_eq!((words_in_token("lisbon"), words_in_token("上海"), words_in_token("我住在上海"), words_in_token("iphone买了")), (1, 1, 3, 2));
        assert!(matches!(index_form("plain text, café"), std::borrow::Cow::Borrowed(_)), "no such letter: the text itself");
        assert_eq!(index_form("저는 서울에 살아요"), " 저는   서울 울에   살아 아요 ", "Korean words with their particles");
        assert_eq!((words_in_token("서울에"), words_in_token("살고")), (1, 1), "Korean is written with spaces");
        assert!(cjk_glob().len() <= MAX_GLOB_PATTERN_BYTES, "{} bytes", cjk_glob().len());
        for &(lo, hi) in CJK_RANGES {
            assert!(CJK_GLOB_RANGES.iter().any(|&(a, b)| a <= lo && hi <= b), "{lo:?}-{hi:?} is covered");
        }
        let glob = regex::Regex::new(&format!("^{}$", cjk_glob().replace('*', ".*"))).unwrap();
        for (text, cjk) in [("我住在上海", true), ("カタカナ", true), ("plain", false), ("서울", true), ("ㅋㅋ", true), ("𠀋", true), ("สวัสดี", false)]
        {
            assert_eq!(glob.is_match(text), cjk, "{text}");
            assert_eq!(text.chars().any(is_cjk_letter), cjk, "{text}");
        }
    }

    #[test]
    fn test_stems_match_common_inflections() {
        assert_eq!(stem("preferences"), stem("preference"));
        assert_eq!(stem("running"), "run");
        assert_eq!(stem("managers"), "manager");
        assert_eq!(stem("games"), "game");
        assert_eq!(stem("classes"), "class");
    }

    /// [`stem`] as first written: lowercased anew, each result copied.
    fn stem_reference(w: &str) -> String {
        let w = w.to_lowercase();
        if w.len() <= 3 || w.chars().any(|c| !c.is_ascii_alphabetic()) {
            return w;
        }
        for (suf, rep) in STEM_SUFFIXES {
            if let Some(base) = w.strip_suffix(suf) {
                if base.len() >= 3 && !(suf == "s" && (base.ends_with('s') || base.ends_with('u') || base.ends_with('i'))) {
                    if suf == "es" && !(base.ends_with("sh") || base.ends_with("ch") || base.ends_with('x') || base.ends_with('s') || base.ends_with('z')) {
                        return w[..w.len() - 1].to_string();
                    }
                    let mut out = format!("{base}{rep}");
                    let b = out.as_bytes();
                    if rep.is_empty()
                        && (suf == "ing" || suf == "ed")
                        && b.len() >= 2
                        && b[b.len() - 1] == b[b.len() - 2]
                        && !matches!(b[b.len() - 1], b'l' | b's' | b'z')
                    {
                        out.pop();
                    }
                    return out;
                }
            }
        }
        w
    }

    #[test]
    fn test_stem_and_stems_equal_their_first_form() {
        let text = "Running managers' Preferences: the GAMES classes stopped, organizational happiness \
                    (ÉCOLE café naïve) hoped rallies studied kindly, boxes buzzes wishes matches; it's 3km at 7:30pm. \
                    Straße İstanbul ΣΟΦΊΑ quickly relational nationalization fullness activities";
        let mut words: Vec<String> = text.split(|c: char| c.is_whitespace() || ",.;:()'".contains(c)).map(String::from).collect();
        words.extend(tokens(text));
        // Every suffix on short and long stems, in both cases.
        for base in ["a", "ab", "abc", "stop", "buzz", "fall", "class", "match", "wish", "ski", "menu"] {
            for suf in [
                "", "s", "es", "ed", "ing", "ly", "edly", "ies", "ied", "ity", "ities", "ness", "ment", "ments", "ement", "ation", "ations", "ational",
                "ization",
            ] {
                words.push(format!("{base}{suf}"));
                words.push(format!("{base}{suf}").to_uppercase());
            }
        }
        for w in &words {
            assert_eq!(stem(w), stem_reference(w), "{w:?}");
        }
        let by_words: Vec<String> = content_words(text).iter().map(|w| stem_reference(w)).collect();
        assert!(by_words.len() > 20, "{by_words:?}");
        assert_eq!(stems(text), by_words);
    }

    #[test]
    fn test_sentences_split_on_terminators() {
        assert_eq!(sentences("Use pnpm, not npm. And dark mode by default."), vec!["Use pnpm, not npm.", "And dark mode by default."]);
        assert_eq!(sentences("Version 2.5 is out! Great"), vec!["Version 2.5 is out!", "Great"]);
    }

    #[test]
    fn test_ascii_tokens_match_the_general_path() {
        // The general path, forced by a non-ASCII character at the end
        // (a separator, so it adds no token).
        let general = |s: &str| tokens(&format!("{s} \u{2014}"));
        for s in ["Caroline's dog isn't here; it's Melanie's! Run 3km at 7:30pm, e-mail X's boss's.", "'s' s's ''s the's 'S 42's A1B2 don't O'Neil", "", "   "]
        {
            assert_eq!(tokens(s), general(s), "{s:?}");
        }
    }

    #[test]
    fn test_possessives_reduce_to_the_name() {
        assert_eq!(tokens("Caroline's dog, Jon’s store"), vec!["caroline", "dog", "jon", "store"]);
        assert_eq!(tokens("it's what's don't"), vec!["its", "whats", "dont"]);
    }

    #[test]
    fn test_stop_words_are_dropped() {
        assert_eq!(content_words("What is the package manager?"), vec!["package", "manager"]);
    }
}
