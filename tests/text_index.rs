//! The in-memory text index (core::recall::text_index) against SQLite's
//! own FTS5 index of the same messages: the same tokens, token for token,
//! and the same `bm25()` for every message matching a query.
//!
//! The messages are generated: English words put through every suffix the
//! Porter stemmer knows, random letter strings with those suffixes,
//! numbers, capitals, apostrophes, hyphens, underscores and punctuation,
//! words of other scripts, accents (precomposed and combining), emoji and
//! any codepoint at all, so each stemming rule and each kind of character
//! is met many times. The codepoint table the tokenizer reads
//! (core::recall::unicode61) is checked for every codepoint.

mod support;

use agent_memory::core::model::Message;
use agent_memory::core::ports::{Sql, SqlValue};
use agent_memory::core::recall::porter;
use agent_memory::core::store::FullText;
use support::{database, with_profile, Rng, APRIL_15};

const WORDS: &[&str] = &[
    "run",
    "walk",
    "hope",
    "hop",
    "bake",
    "paint",
    "agree",
    "feed",
    "plaster",
    "motor",
    "sing",
    "conflate",
    "fall",
    "file",
    "happy",
    "relate",
    "general",
    "adjust",
    "control",
    "sky",
    "cry",
    "try",
    "play",
    "boy",
    "tree",
    "ease",
    "size",
    "fizz",
    "roll",
    "tell",
    "national",
    "condition",
    "rational",
    "valence",
    "digit",
    "radio",
    "sense",
    "hope",
    "active",
    "operate",
    "formal",
    "electric",
    "cat",
    "pony",
    "caress",
    "dress",
    "bus",
    "is",
    "as",
    "us",
    "news",
    "yes",
    "a",
    "i",
    "go",
    "ok",
    "aing",
    "eing",
    "oing",
    "eed",
    "bled",
    "sized",
    "ate",
    "ion",
    "tion",
    "ous",
    "ive",
    "ize",
    "ism",
    "ment",
    "ent",
    "ant",
    "ence",
    "ance",
    "able",
    "ible",
    "ness",
    "ful",
    "ical",
    "logi",
    "bli",
    "alli",
    "eli",
    "ousli",
    "ator",
    "alism",
    "aliti",
    "iviti",
    "biliti",
    "icate",
    "iciti",
    "ative",
    "alize",
    "yy",
    "yay",
    "syzygy",
    "rhythm",
    "queue",
    "strength",
    "a1b2",
    "x",
];

const SUFFIXES: &[&str] = &[
    "", "", "", "s", "es", "ies", "ss", "sses", "ed", "eed", "ing", "ings", "ly", "y", "e", "ll", "ational", "tional", "enci", "anci", "izer", "logi", "bli",
    "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "icate", "ative",
    "alize", "iciti", "ical", "ful", "ness", "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "sion", "tion", "ou",
    "ism", "ate", "iti", "ous", "ive", "ize", "at", "bl", "iz", "ated", "bled", "izing", "ement", "ings", "edly",
];

const SEPARATORS: &[&str] = &[
    " ", " ", " ", " ", ", ", ". ", "'", "-", "_", "!? ", "\n", " (", ") ", "/", ":", "  ", "\"", "&", "#", " — ", "’", " 🎉 ", "\u{200d}", "\u{a0}", "「",
    "。",
];

/// Words beyond ASCII: accents precomposed and combining, other scripts,
/// case pairs, digits of other scripts, emoji with joiners.
const UNICODE_WORDS: &[&str] = &[
    "café",
    "CAFÉS",
    "naïve",
    "mañana",
    "Straße",
    "ÉCOLE",
    "e\u{301}tude",
    "Ångström",
    "İstanbul",
    "ǅemal",
    "東京",
    "日本語の文章",
    "서울에서",
    "ㅋㅋ",
    "данные",
    "ДАННЫЕ",
    "Ωμέγα",
    "ΑΒΓ",
    "שלום",
    "مرحبا",
    "٣٤٥",
    "१२३",
    "ＡＢＣ",
    "ﬁle",
    "Œuvre",
    "ĳs",
    "💪🏽",
    "👩\u{200d}💻",
    "♀\u{fe0f}",
    "x\u{fe0f}y",
    "\u{e000}priv",
    "a\u{300}\u{301}b",
];

fn random_letters(rng: &mut Rng) -> String {
    const CONSONANTS: &[u8] = b"bcdfghjklmnpqrstvwxyz";
    const VOWELS: &[u8] = b"aeiouy";
    let n = 1 + rng.below(7);
    (0..n).map(|i| if (i + rng.below(3)) % 2 == 0 { CONSONANTS[rng.below(CONSONANTS.len())] } else { VOWELS[rng.below(VOWELS.len())] } as char).collect()
}

fn word(rng: &mut Rng) -> String {
    let base = match rng.below(14) {
        0..=5 => rng.pick(WORDS).to_string(),
        6..=8 => random_letters(rng),
        9 => rng.below(100_000).to_string(),
        10 | 11 => rng.pick(UNICODE_WORDS).to_string(),
        // Any codepoint at all, between letters.
        _ => format!("a{}b", char::from_u32(0x80 + rng.below(0x2_0000) as u32).unwrap_or('\u{fffd}')),
    };
    let mut w = format!("{base}{}", rng.pick(SUFFIXES));
    match rng.below(12) {
        0 => w = w.to_uppercase(),
        1 if w.is_char_boundary(1) => w[..1].make_ascii_uppercase(),
        2 => w = w.repeat(12), // over 64 bytes now and then: not stemmed
        _ => {}
    }
    w
}

fn text(rng: &mut Rng, words: usize) -> String {
    let mut s = String::new();
    for i in 0..words {
        if i > 0 {
            s.push_str(rng.pick(SEPARATORS));
        }
        s.push_str(&word(rng));
    }
    s
}

/// A profile of `n` generated messages in a few sessions.
fn messages(rng: &mut Rng, n: usize) -> Vec<Message> {
    let roles = ["user", "assistant", "Maria", "John Smith", "Dr. O'Neil"];
    (0..n)
        .map(|i| Message {
            id: format!("msg_{i:06}"),
            session_id: format!("s{}", i / 40),
            role: roles[rng.below(roles.len())].to_string(),
            content: {
                let words = 1 + rng.below(40);
                text(rng, words)
            },
            timestamp: None,
            position: (i % 40) as i64,
            created_at: "2026-04-15T10:00:00Z".into(),
            metadata: Default::default(),
        })
        .collect()
}

#[test]
fn test_tokens_are_fts5s_own_token_for_token() {
    let sql = database();
    let mut rng = Rng(0x7e57_0f7e_c5a1_1d3e);
    let stored = messages(&mut rng, 1500);
    with_profile(&sql, APRIL_15, |p| p.store().put_messages(&stored).unwrap());
    FullText::Messages.catch_up(&sql).unwrap();
    sql.execute("CREATE VIRTUAL TABLE temp.words USING fts5vocab(main, 'messages_fts', 'instance')", &[]).unwrap();
    let mut fts5: std::collections::BTreeMap<i64, Vec<(String, String)>> = Default::default();
    for r in sql.query("SELECT doc, col, term FROM temp.words ORDER BY doc, col = 'content', offset", &[]).unwrap() {
        fts5.entry(r[0].as_i64().unwrap()).or_default().push((r[1].as_str().unwrap().to_string(), r[2].as_str().unwrap().to_string()));
    }
    let rows = sql.query("SELECT rowid, role, content FROM messages ORDER BY rowid", &[]).unwrap();
    assert_eq!(rows.len(), stored.len());
    let mut tokens_seen = 0;
    for r in rows {
        let mut ours: Vec<(String, String)> = Vec::new();
        for (col, i) in [("role", 1), ("content", 2)] {
            // As the index adds a text: Chinese, Japanese and Korean runs in pairs.
            let text = agent_memory::core::text::index_form(r[i].as_str().unwrap());
            porter::tokens(&text, |t| ours.push((col.to_string(), String::from_utf8(t.to_vec()).unwrap())));
        }
        let rowid = r[0].as_i64().unwrap();
        let theirs = fts5.remove(&rowid).unwrap_or_default();
        assert_eq!(ours, theirs, "message {rowid}: {:?} / {:?}", r[1], r[2]);
        tokens_seen += ours.len();
    }
    assert!(tokens_seen > 20_000, "the corpus is not trivial ({tokens_seen} tokens)");
}

#[test]
fn test_bm25_is_fts5s_own_for_every_matching_message_as_recall_reads_it() {
    let sql = database();
    let mut rng = Rng(0xb325_0f00_d1e5_5eed);
    let stored = messages(&mut rng, 1200);
    with_profile(&sql, APRIL_15, |p| {
        p.store().put_messages(&stored).unwrap();
        FullText::Messages.catch_up(p.sql).unwrap();
        let dir = p.turns.unwrap().sync(p.sql).unwrap();
        let mut compared = 0;
        for _ in 0..300 {
            // Queries as recall builds them: single words, OR-ed.
            let n = 1 + rng.below(6);
            let words: Vec<String> = (0..n).map(|_| word(&mut rng).to_lowercase()).collect();
            let phrases = agent_memory::core::recall::query::phrases(&words);
            if phrases.is_empty() {
                // No letter or digit (an emoji): recall searches nothing.
                assert!(agent_memory::core::recall::query::match_expr(&words).is_none());
                continue;
            }
            // A phrase of several tokens is left to SQLite; every other
            // query is scored.
            let single = phrases.iter().all(|p| porter::tokens(p, |_| {}) == 1);
            let Some(ours) = dir.text().bm25(&phrases, [0.3, 1.0], usize::MAX) else {
                assert!(!single, "a query of single tokens is scored: {phrases:?}");
                continue;
            };
            assert!(single, "{phrases:?} has a phrase of several tokens");
            let expr = agent_memory::core::recall::query::match_expr(&words).unwrap();
            let theirs: Vec<(i64, f64)> = sql
                .query(
                    "SELECT rowid, bm25(messages_fts, 0.3, 1.0) FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY rowid",
                    &[SqlValue::Text(expr.clone())],
                )
                .unwrap()
                .into_iter()
                .map(|r| (r[0].as_i64().unwrap(), r[1].as_f64().unwrap()))
                .collect();
            let mut ours: Vec<(i64, f64)> = ours.into_iter().map(|(turn, s)| (rowid_of(&dir, turn), s)).collect();
            ours.sort_by_key(|h| h.0);
            assert_eq!(ours.len(), theirs.len(), "{expr}: the same messages match");
            for ((a, x), (b, y)) in ours.iter().zip(&theirs) {
                assert_eq!(a, b, "{expr}");
                assert_eq!(x, y, "{expr}: message {a}");
            }
            // And as recall reads them with nothing resident
            // (places::fts5_best: the scores cross as JSON), bit for bit:
            // a score rounded on the way ranks near-ties otherwise.
            let mut read = agent_memory::core::recall::places::fts5_best(p.sql, FullText::Messages, &[0.3, 1.0], &phrases, theirs.len()).unwrap();
            read.sort_by_key(|h| h.0);
            let bits = |v: &[(i64, f64)]| v.iter().map(|&(r, s)| (r, s.to_bits())).collect::<Vec<_>>();
            assert_eq!(bits(&read), bits(&theirs), "{expr}: as recall reads it");
            compared += theirs.len();
        }
        assert!(compared > 5_000, "the queries match enough messages to compare ({compared})");
    });
}

/// The rowid of a turn of the directory (its message's, as stored:
/// [`messages`] are put in id order, rowids from 1).
fn rowid_of(dir: &agent_memory::core::recall::directory::Directory, turn: u32) -> i64 {
    let id = &dir.turn(turn).id;
    id.trim_start_matches("msg_").parse::<i64>().unwrap() + 1
}

#[test]
fn test_generated_messages_get_rowids_in_id_order() {
    let sql = database();
    let stored = messages(&mut Rng(1), 50);
    with_profile(&sql, APRIL_15, |p| p.store().put_messages(&stored).unwrap());
    for r in sql.query("SELECT rowid, id FROM messages", &[]).unwrap() {
        assert_eq!(format!("msg_{:06}", r[0].as_i64().unwrap() - 1), r[1].as_str().unwrap());
    }
}

#[test]
fn test_best_first_with_a_limit_matches_fts5s_order() {
    let sql = database();
    let mut rng = Rng(0x0dde_b0a7_5a11_7e57);
    let stored = messages(&mut rng, 800);
    with_profile(&sql, APRIL_15, |p| {
        p.store().put_messages(&stored).unwrap();
        FullText::Messages.catch_up(p.sql).unwrap();
        let dir = p.turns.unwrap().sync(p.sql).unwrap();
        for _ in 0..100 {
            let words: Vec<String> = (0..3).map(|_| rng.pick(WORDS).to_string()).collect();
            let phrases = agent_memory::core::recall::query::phrases(&words);
            let ours: Vec<i64> = dir.text().bm25(&phrases, [0.3, 1.0], 20).unwrap().into_iter().map(|(t, _)| rowid_of(&dir, t)).collect();
            let theirs: Vec<i64> = sql
                .query(
                    "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 ORDER BY bm25(messages_fts, 0.3, 1.0), rowid LIMIT 20",
                    &[SqlValue::Text(agent_memory::core::recall::query::match_expr(&words).unwrap())],
                )
                .unwrap()
                .into_iter()
                .map(|r| r[0].as_i64().unwrap())
                .collect();
            assert_eq!(ours, theirs, "{words:?}");
        }
    });
}

/// What SQLite's `unicode61` tokenizer (the defaults: token characters
/// are the categories L*, N* and Co; diacritics removed, the "simple"
/// way) does with each non-ASCII codepoint of `range`: its class (0
/// separator, 1 token character, 2 diacritic: continues a token, never
/// starts one) and what it folds to (`None` when removed). Probed by
/// indexing `x{c}y` (a separator splits it; anything else is folded
/// into one token) and `{c}y` (only a token character starts a token).
fn probe_unicode61(range: std::ops::RangeInclusive<u32>) -> Vec<(u32, u8, Option<char>)> {
    let sql = support::NativeSql::memory();
    let chars: Vec<char> = range.filter(|&c| c >= 0x80).filter_map(char::from_u32).collect();
    let mut out = Vec::with_capacity(chars.len());
    for chunk in chars.chunks(4096) {
        sql.execute("DROP TABLE IF EXISTS temp.probe", &[]).unwrap();
        sql.execute("CREATE VIRTUAL TABLE temp.probe USING fts5(a, b, tokenize='unicode61')", &[]).unwrap();
        sql.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.probe_words USING fts5vocab(temp, 'probe', 'instance')", &[]).unwrap();
        let inside: Vec<String> = chunk.iter().map(|c| format!("x{c}y")).collect();
        let start: Vec<String> = chunk.iter().map(|c| format!("{c}y")).collect();
        sql.execute("INSERT INTO temp.probe (rowid, a, b) VALUES (1, ?1, ?2)", &[SqlValue::Text(inside.join(" ")), SqlValue::Text(start.join(" "))]).unwrap();
        let mut a: Vec<String> = Vec::new();
        let mut b: Vec<String> = Vec::new();
        for r in sql.query("SELECT col, term FROM temp.probe_words ORDER BY col, offset", &[]).unwrap() {
            let term = r[1].as_str().unwrap().to_string();
            if r[0].as_str() == Some("a") {
                a.push(term)
            } else {
                b.push(term)
            }
        }
        // Probes "x{c}y": one token "x{fold}y", or "x" then "y".
        let mut a = a.into_iter();
        let mut b = b.into_iter();
        for &c in chunk {
            let t = a.next().expect("a token for every probe");
            let (joined, fold) = if t == "x" {
                assert_eq!(a.next().as_deref(), Some("y"), "probe of {c:?}");
                (false, None)
            } else {
                let inner = &t[1..t.len() - 1];
                assert!(t.starts_with('x') && t.ends_with('y') && inner.chars().count() <= 1, "probe of U+{:04X}: {t:?}", c as u32);
                (true, inner.chars().next())
            };
            // Probes "{c}y": "{fold}y" when c starts a token, else "y".
            let s = b.next().expect("a token for every probe");
            let starts = s != "y";
            let class = match (starts, joined) {
                (true, _) => 1,
                (false, true) => 2,
                (false, false) => 0,
            };
            out.push((c as u32, class, if joined { fold } else { Some(c) }));
        }
        assert!(a.next().is_none() && b.next().is_none(), "every token read");
    }
    out
}

/// The classes and folds as the generated table states them.
fn table_says(c: u32) -> (u8, Option<char>) {
    use agent_memory::core::recall::unicode61::{CLASSES, FOLDS};
    let class = match CLASSES.binary_search_by(|&(lo, hi, _)| {
        if hi < c {
            std::cmp::Ordering::Less
        } else if lo > c {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }) {
        Ok(i) => CLASSES[i].2,
        Err(_) => 0,
    };
    let fold = match FOLDS.binary_search_by_key(&c, |&(k, _)| k) {
        Ok(i) => char::from_u32(FOLDS[i].1).filter(|_| FOLDS[i].1 != 0),
        Err(_) => char::from_u32(c),
    };
    (class, fold)
}

#[test]
fn test_unicode61_table_is_sqlites_own_for_every_codepoint() {
    let mut checked = 0;
    for (c, class, fold) in probe_unicode61(0x80..=0x10FFFF) {
        let (t_class, t_fold) = table_says(c);
        assert_eq!(t_class, class, "class of U+{c:04X}");
        if class != 0 {
            assert_eq!(t_fold, fold, "fold of U+{c:04X}");
        }
        checked += 1;
    }
    assert!(checked > 1_000_000);
}

/// Writes src/core/recall/unicode61.rs from SQLite's tokenizer:
/// `cargo test --test text_index -- --ignored write_unicode61_table`.
#[test]
#[ignore]
fn write_unicode61_table() {
    let probed = probe_unicode61(0x80..=0x10FFFF);
    let mut classes: Vec<(u32, u32, u8)> = Vec::new();
    let mut folds: Vec<(u32, u32)> = Vec::new();
    for &(c, class, fold) in &probed {
        if class != 0 {
            match classes.last_mut() {
                Some(last) if last.1 + 1 == c && last.2 == class => last.1 = c,
                _ => classes.push((c, c, class)),
            }
            let f = fold.map_or(0, |f| f as u32);
            if f != c {
                folds.push((c, f));
            }
        }
    }
    let mut s = String::from(
        "//! What SQLite's `unicode61` tokenizer (its defaults) does with each\n\
         //! non-ASCII codepoint, probed from SQLite itself by\n\
         //! `cargo test --test text_index -- --ignored write_unicode61_table`\n\
         //! (generated: do not edit; tests/text_index.rs checks it against\n\
         //! SQLite for every codepoint).\n\n\
         /// `(first, last, class)`, sorted: 1 a token character, 2 a diacritic\n\
         /// (continues a token, never starts one). Codepoints in no range are\n\
         /// separators.\n\
         pub const CLASSES: &[(u32, u32, u8)] = &[\n",
    );
    for (lo, hi, k) in &classes {
        s.push_str(&format!("    (0x{lo:X}, 0x{hi:X}, {k}),\n"));
    }
    s.push_str("];\n\n/// `(codepoint, folded)`, sorted, for the token characters and\n/// diacritics that folding changes (lower case, diacritics removed);\n/// 0: the codepoint is dropped.\npub const FOLDS: &[(u32, u32)] = &[\n");
    for (c, f) in &folds {
        s.push_str(&format!("    (0x{c:X}, 0x{f:X}),\n"));
    }
    s.push_str("];\n");
    std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/src/core/recall/unicode61.rs"), s).unwrap();
    eprintln!("{} ranges, {} folds", classes.len(), folds.len());
}

/// A profile of `n` generated memories (content, a dotted key now and
/// then, a few search queries).
fn memories(rng: &mut Rng, n: usize) -> Vec<agent_memory::core::model::Memory> {
    use agent_memory::core::model::{Memory, MemoryType, Status};
    (0..n)
        .map(|i| {
            let content = {
                let words = 1 + rng.below(30);
                text(rng, words)
            };
            Memory {
                id: format!("mem_{i:06}"),
                kind: MemoryType::Fact,
                key: (rng.below(3) == 0).then(|| format!("{}.{}_{}", word(rng), word(rng), word(rng)).to_lowercase()),
                summary: content.clone(),
                content,
                session_id: "s".into(),
                source_message_ids: vec![],
                search_queries: (0..rng.below(4))
                    .map(|_| {
                        let words = 1 + rng.below(8);
                        text(rng, words)
                    })
                    .collect(),
                status: Status::Active,
                supersedes: None,
                superseded_by: None,
                event_date: None,
                created_at: "2026-04-15T10:00:00Z".into(),
                updated_at: "2026-04-15T10:00:00Z".into(),
                expires_at: None,
                metadata: Default::default(),
                valid_from: None,
                valid_to: None,
            }
        })
        .collect()
}

/// `bm25(memories_fts)` at the recall's column weights for every memory
/// matching any of `words`, by rowid.
fn fts5_memory_scores(sql: &dyn Sql, words: &[String]) -> Vec<(i64, f64)> {
    use agent_memory::core::recall::directory::MEMORY_WEIGHTS;
    sql.query(
        "SELECT rowid, bm25(memories_fts, ?2, ?3, ?4) FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rowid",
        &[
            SqlValue::Text(agent_memory::core::recall::query::match_expr(words).unwrap()),
            SqlValue::Real(MEMORY_WEIGHTS[0]),
            SqlValue::Real(MEMORY_WEIGHTS[1]),
            SqlValue::Real(MEMORY_WEIGHTS[2]),
        ],
    )
    .unwrap()
    .into_iter()
    .map(|r| (r[0].as_i64().unwrap(), r[1].as_f64().unwrap()))
    .collect()
}

/// The memory index's hits (document, score) as (rowid, score), by rowid.
fn by_rowid(dir: &agent_memory::core::recall::directory::Directory, hits: Vec<(u32, f64)>) -> Vec<(i64, f64)> {
    let mut hits: Vec<(i64, f64)> = hits.into_iter().map(|(doc, s)| (dir.memories().rowid(doc), s)).collect();
    hits.sort_by_key(|h| h.0);
    hits
}

#[test]
fn test_memory_bm25_is_fts5s_own_for_every_matching_memory() {
    use agent_memory::core::recall::directory::MEMORY_WEIGHTS;
    let sql = database();
    let mut rng = Rng(0x3e30_41e5_0f5e_ed11);
    let stored = memories(&mut rng, 1000);
    with_profile(&sql, APRIL_15, |p| {
        let items: Vec<(&agent_memory::core::model::Memory, &str)> = stored.iter().map(|m| (m, m.id.as_str())).collect();
        p.store().insert_memories(&items).unwrap();
        FullText::Memories.catch_up(p.sql).unwrap();
        assert_eq!(p.turns.unwrap().sync(p.sql).unwrap().memories().text().len(), 1000);
        // Some leave, hard-deleted: the directory reads the rest again.
        p.sql.execute("DELETE FROM memories_fts WHERE rowid IN (SELECT rowid FROM memories WHERE id LIKE '%7')", &[]).unwrap();
        p.sql.execute("DELETE FROM memories WHERE id LIKE '%7'", &[]).unwrap();
        let dir = p.turns.unwrap().sync(p.sql).unwrap();
        assert_eq!(dir.memories().text().len(), 900);
        let mut compared = 0;
        for _ in 0..300 {
            let n = 1 + rng.below(6);
            let words: Vec<String> = (0..n).map(|_| word(&mut rng).to_lowercase()).collect();
            let phrases = agent_memory::core::recall::query::phrases(&words);
            let Some(ours) = dir.memories().text().bm25(&phrases, MEMORY_WEIGHTS, usize::MAX) else { continue };
            let theirs: Vec<(i64, f64)> = fts5_memory_scores(&sql, &words);
            let ours = by_rowid(&dir, ours);
            assert_eq!(ours.len(), theirs.len(), "{words:?}: the same memories match");
            for ((a, x), (b, y)) in ours.iter().zip(&theirs) {
                assert_eq!(a, b);
                assert_eq!(x, y, "{words:?}: memory {a}");
            }
            compared += theirs.len();
        }
        assert!(compared > 3_000, "the queries match enough memories to compare ({compared})");
    });
}

#[test]
fn test_scores_read_for_a_few_memories_are_those_ranking_them_all_gives() {
    use agent_memory::core::recall::directory::MEMORY_WEIGHTS;
    use agent_memory::core::recall::places::{CaughtUp, Source};
    let sql = database();
    let mut rng = Rng(0x5eed_0f_f00d_2026);
    let stored = memories(&mut rng, 600);
    with_profile(&sql, APRIL_15, |p| {
        let items: Vec<(&agent_memory::core::model::Memory, &str)> = stored.iter().map(|m| (m, m.id.as_str())).collect();
        p.store().insert_memories(&items).unwrap();
        FullText::Memories.catch_up(p.sql).unwrap();
        let dir = p.turns.unwrap().sync(p.sql).unwrap();
        let all_rowids: Vec<i64> = (0..dir.memories().text().len() as u32).map(|d| dir.memories().rowid(d)).collect();
        let mut compared = 0;
        for _ in 0..200 {
            let n = 1 + rng.below(4);
            let words: Vec<String> = (0..n).map(|_| word(&mut rng).to_lowercase()).collect();
            let phrases = agent_memory::core::recall::query::phrases(&words);
            let Some(all) = dir.memories().text().bm25(&phrases, MEMORY_WEIGHTS, usize::MAX) else { continue };
            let all: std::collections::HashMap<i64, f64> = all.into_iter().map(|(doc, s)| (dir.memories().rowid(doc), s)).collect();
            // A few memories, matching or not.
            let matching: Vec<i64> = all.keys().copied().collect();
            let mut few: rustc_hash::FxHashSet<i64> = (0..1 + rng.below(40)).map(|_| all_rowids[rng.below(all_rowids.len())]).collect();
            if !matching.is_empty() {
                few.extend((0..rng.below(20)).map(|_| matching[rng.below(matching.len())]));
            }
            let expected: std::collections::BTreeMap<i64, f64> = few.iter().filter_map(|r| all.get(r).map(|s| (*r, *s))).collect();
            for src in [Source::Resident(&dir), Source::Sql(&CaughtUp::default())] {
                let got: std::collections::BTreeMap<i64, f64> = src.memory_scores(p.sql, &phrases, MEMORY_WEIGHTS, &few).unwrap().into_iter().collect();
                assert_eq!(got.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>(), "{words:?}: the same memories match");
                for (r, s) in &got {
                    assert!((s - expected[r]).abs() < 1e-9, "{words:?}: memory {r}: {s} vs {}", expected[r]);
                }
            }
            compared += expected.len();
        }
        assert!(compared > 500, "the queries match enough of the few to compare ({compared})");
    });
}

/// A snapshot written by a directory larger than the bound its reader
/// holds to (a budget lowered since, a build before the bound): read with
/// its text indexes off, their postings read past, not held.
#[test]
fn test_a_snapshot_over_the_bound_is_read_with_its_text_indexes_off() {
    use agent_memory::core::recall::directory::{TurnDirectory, SNAPSHOT_MIN};
    let sql = database();
    let mut rng = Rng(0x0b0d_5a9e);
    let stored = messages(&mut rng, 5000);
    assert!(stored.len() > SNAPSHOT_MIN);
    let built = TurnDirectory::new();
    support::with_profile_in(&sql, APRIL_15, &built, |p| {
        p.store().put_messages(&stored).unwrap();
        assert!(p.turns.unwrap().maintain(p.sql).unwrap(), "a snapshot is written");
    });
    let whole = built.heap_bytes();
    let index = built.sync(&sql).unwrap().text().heap_bytes();
    let bounded = TurnDirectory::new();
    bounded.hold_within(index);
    {
        let dir = bounded.sync(&sql).unwrap();
        assert!(bounded.from_snapshot());
        assert!(dir.text().is_off() && dir.len() == stored.len(), "the places read, the words not");
    }
    let held = bounded.heap_bytes();
    assert!(held < whole - index, "{held} held of {whole}, {index} of them words");
    let unbounded = TurnDirectory::new();
    assert!(*unbounded.sync(&sql).unwrap() == *built.sync(&sql).unwrap(), "unbounded, the same directory");
}

/// A snapshot written with a text index off keeps the bound it went
/// over: read under that bound or a smaller one, the index stays off
/// (nothing is built to be thrown away); under a larger one (a budget
/// raised since) it is read from the rows again and scores, and the
/// snapshot written again says so. Before, it stayed off for good.
#[test]
fn test_an_index_a_snapshot_holds_off_is_built_again_under_a_larger_bound() {
    use agent_memory::core::recall::directory::{TurnDirectory, SNAPSHOT_MIN};
    let sql = database();
    let mut rng = Rng(0x0ff_b0d5);
    let stored = messages(&mut rng, 5000);
    assert!(stored.len() > SNAPSHOT_MIN);
    let index = {
        let probe = TurnDirectory::new();
        support::with_profile_in(&sql, APRIL_15, &probe, |p| p.store().put_messages(&stored).unwrap());
        let words = probe.sync(&sql).unwrap().text().heap_bytes();
        words / 2
    };
    // Written by a directory bound to half its messages' index: off.
    let small = TurnDirectory::new();
    small.hold_within(index);
    assert!(small.sync(&sql).unwrap().text().is_off());
    assert!(small.maintain(&sql).unwrap(), "a snapshot is written");
    let again = TurnDirectory::new();
    again.hold_within(index);
    assert!(again.sync(&sql).unwrap().text().is_off() && again.from_snapshot(), "the same bound: read off from the snapshot");
    // A budget raised since: built again, from the rows, and it scores.
    let large = TurnDirectory::new();
    large.hold_within(index * 16);
    assert!(!large.sync(&sql).unwrap().text().is_off(), "built again under the larger bound");
    assert!(!large.from_snapshot());
    assert!(large.maintain(&sql).unwrap(), "the snapshot is written again");
    let cold = TurnDirectory::new();
    cold.hold_within(index * 16);
    assert!(!cold.sync(&sql).unwrap().text().is_off() && cold.from_snapshot(), "and read on from it");
}

#[test]
fn test_directory_snapshot_restores_the_same_directory_and_follows_changes() {
    use agent_memory::core::recall::directory::{TurnDirectory, SNAPSHOT_MIN};
    let sql = database();
    let mut rng = Rng(0x5a9_5407_0d1e_c7a1);
    let stored = messages(&mut rng, 3000);
    let mems = memories(&mut rng, 1500);
    assert!(stored.len() + mems.len() > SNAPSHOT_MIN);
    let built = TurnDirectory::new();
    support::with_profile_in(&sql, APRIL_15, &built, |p| {
        p.store().put_messages(&stored[..2800]).unwrap();
        let items: Vec<(&agent_memory::core::model::Memory, &str)> = mems.iter().map(|m| (m, m.id.as_str())).collect();
        p.store().insert_memories(&items).unwrap();
        assert!(p.turns.unwrap().maintain(p.sql).unwrap(), "a first snapshot is written");
        assert!(!p.turns.unwrap().maintain(p.sql).unwrap(), "and not again while nothing changed");
    });
    let same = |fresh: &TurnDirectory| *fresh.sync(&sql).unwrap() == *built.sync(&sql).unwrap();

    // A cold start reads the snapshot, and equals the directory built row by row.
    let cold = TurnDirectory::new();
    assert!(same(&cold));
    assert!(cold.from_snapshot());

    // Messages added since: the snapshot, then the new rows.
    with_profile(&sql, APRIL_15, |p| p.store().put_messages(&stored[2800..]).unwrap());
    let cold = TurnDirectory::new();
    assert!(same(&cold) && cold.from_snapshot(), "snapshot plus the rows after it");
    assert!(!built.maintain(&sql).unwrap(), "200 new messages are too few for a segment");

    // Enough new documents for a second segment, holding only them.
    let more = messages(&mut rng, 4000);
    let more: Vec<_> = more[3000..].iter().map(|m| Message { id: format!("{}_b", m.id), ..m.clone() }).collect();
    with_profile(&sql, APRIL_15, |p| p.store().put_messages(&more).unwrap());
    let before = sql.query("SELECT count(*) FROM directory_snapshot", &[]).unwrap()[0][0].as_i64();
    assert!(built.maintain(&sql).unwrap(), "a second segment");
    let headers = sql.query("SELECT part FROM directory_snapshot WHERE part % 1048576 = 0", &[]).unwrap();
    assert_eq!(headers.len(), 2, "two segments");
    assert!(sql.query("SELECT count(*) FROM directory_snapshot", &[]).unwrap()[0][0].as_i64() > before, "the first one kept");
    let cold = TurnDirectory::new();
    assert!(same(&cold) && cold.from_snapshot(), "both segments read");

    // A deletion puts the snapshot out of step: every row is read, and
    // the next maintenance writes it again.
    sql.execute("DELETE FROM messages_fts WHERE rowid = 5", &[]).unwrap();
    sql.execute("DELETE FROM messages WHERE rowid = 5", &[]).unwrap();
    let cold = TurnDirectory::new();
    assert!(same(&cold) && !cold.from_snapshot(), "an out-of-step snapshot is not used");
    assert!(built.maintain(&sql).unwrap(), "rewritten after a deletion");
    let cold = TurnDirectory::new();
    assert!(same(&cold) && cold.from_snapshot());

    // A long chain is written again as one segment.
    {
        use agent_memory::core::recall::directory::MAX_SEGMENTS;
        let mut round = 0;
        while sql.query("SELECT count(*) FROM directory_snapshot WHERE part % 1048576 = 0", &[]).unwrap()[0][0].as_i64() < Some(MAX_SEGMENTS) {
            round += 1;
            // A tenth of the documents and more: one segment each.
            let docs = sql.query("SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM memories)", &[]).unwrap()[0][0].as_i64().unwrap();
            let batch: Vec<Message> = messages(&mut rng, (docs as usize / 9).max(1100))
                .into_iter()
                .map(|m| Message { id: format!("{}_r{round}", m.id), session_id: format!("{}_r{round}", m.session_id), ..m })
                .collect();
            with_profile(&sql, APRIL_15, |p| p.store().put_messages(&batch).unwrap());
            assert!(built.maintain(&sql).unwrap());
        }
        let batch: Vec<Message> =
            messages(&mut rng, 1500).into_iter().map(|m| Message { id: format!("{}_last", m.id), session_id: format!("{}_last", m.session_id), ..m }).collect();
        with_profile(&sql, APRIL_15, |p| p.store().put_messages(&batch).unwrap());
        assert!(built.maintain(&sql).unwrap());
        let headers = sql.query("SELECT count(*) FROM directory_snapshot WHERE part % 1048576 = 0", &[]).unwrap();
        assert_eq!(headers[0][0].as_i64(), Some(1), "one segment again");
        let cold = TurnDirectory::new();
        assert!(same(&cold) && cold.from_snapshot());
    }

    // A damaged snapshot is not used, and is rewritten.
    sql.execute("UPDATE directory_snapshot SET data = substr(data, 1, 1000) WHERE part = 2", &[]).unwrap();
    let cold = TurnDirectory::new();
    assert!(same(&cold) && !cold.from_snapshot(), "a damaged snapshot falls back to the rows");
    assert!(cold.maintain(&sql).unwrap(), "and is written again");
    let cold = TurnDirectory::new();
    assert!(same(&cold) && cold.from_snapshot());

    // A wipe, then a profile as large again: the directory that knew the
    // old segments writes new ones, and a cold start reads those.
    with_profile(&sql, APRIL_15, |p| p.wipe().unwrap());
    assert!(!built.maintain(&sql).unwrap(), "an empty profile keeps no snapshot");
    let again: Vec<Message> = messages(&mut rng, 4500).into_iter().map(|m| Message { id: format!("{}_w", m.id), ..m }).collect();
    with_profile(&sql, APRIL_15, |p| p.store().put_messages(&again).unwrap());
    assert!(built.maintain(&sql).unwrap());
    let cold = TurnDirectory::new();
    assert!(same(&cold) && cold.from_snapshot());
    assert_eq!(cold.sync(&sql).unwrap().len(), 4500);
}

#[test]
fn test_an_index_over_its_bounds_turns_off_and_leaves_scoring_to_sqlite() {
    use agent_memory::core::recall::text_index::TextIndex;
    let mut ix = TextIndex::<2>::default();
    ix.add(0, ["user", "lemon tart"]);
    assert!(ix.bm25(&["lemon".to_string()], [0.3, 1.0], 10).is_some());
    // A word 70,000 times in one column: its count no longer fits.
    ix.add(1, ["user", &"lemon ".repeat(70_000)]);
    assert!(ix.is_off() && ix.is_empty());
    assert!(ix.bm25(&["lemon".to_string()], [0.3, 1.0], 10).is_none());
    ix.add(2, ["user", "more"]);
    assert!(ix.is_empty(), "an index that is off stays off");
}

#[test]
fn test_a_phrase_search_sees_messages_still_waiting_for_full_text_rows() {
    use agent_memory::core::recall::places::{CaughtUp, Source};
    use agent_memory::core::recall::{channels::score_turns, query::TextQuery};
    let sql = database();
    let day = chrono::NaiveDate::from_ymd_opt(2026, 4, 15).unwrap();
    with_profile(&sql, APRIL_15, |p| {
        let stored = vec![
            Message {
                id: "msg_a".into(),
                session_id: "s".into(),
                role: "user".into(),
                content: "I moved to VS Code for the frontend work.".into(),
                timestamp: None,
                position: 0,
                created_at: "2026-04-15T10:00:00Z".into(),
                metadata: Default::default(),
            },
            Message {
                id: "msg_b".into(),
                session_id: "s".into(),
                role: "user".into(),
                content: "The code review is on Friday.".into(),
                timestamp: None,
                position: 1,
                created_at: "2026-04-15T10:00:00Z".into(),
                metadata: Default::default(),
            },
        ];
        p.store().put_messages(&stored).unwrap();
        let waiting = sql.query("SELECT COUNT(*) FROM messages_fts", &[]).unwrap()[0][0].as_i64();
        assert_eq!(waiting, Some(0), "two messages are fewer than a batch");
        // A phrase of two tokens is searched by FTS5, not in memory.
        let q = TextQuery::new("Which editor?", &["vs code".to_string()], day);
        for src in [Source::Sql(&CaughtUp::default()), Source::Resident(&p.turns.unwrap().sync(p.sql).unwrap())] {
            let found = score_turns(p.sql, src, &q, &agent_memory::core::recall::RecallScope::live_at(APRIL_15)).unwrap();
            let ids: Vec<&str> = found.plain.iter().map(|(id, _)| id.as_str()).collect();
            assert_eq!(ids, ["msg_a"], "the phrase matches the first message only");
        }
    });
}

#[test]
fn test_the_directory_takes_rows_fed_right_after_its_mark_and_reads_any_other_back() {
    use agent_memory::core::recall::directory::TurnDirectory;
    let sql = database();
    let message = |content: &str, position: i64| Message {
        id: agent_memory::core::ids::message_id("s", "user", content),
        session_id: "s".into(),
        role: "user".into(),
        content: content.into(),
        timestamp: None,
        position,
        created_at: "2026-04-15T10:00:00.000Z".into(),
        metadata: Default::default(),
    };
    let hits = |turns: &TurnDirectory, word: &str| turns.sync(&sql).unwrap().text().bm25(&[word.to_string()], [1.0, 1.0], 10).unwrap().len();
    let turns = TurnDirectory::new();
    turns.sync(&sql).unwrap();
    with_profile(&sql, APRIL_15, |p| {
        // Fed as written right after the mark: taken, and not read back
        // (the directory holds what it was handed, here on purpose not
        // what the row says).
        let written = p.store().put_messages(&[message("apples are red", 0)]).unwrap();
        turns.feed_messages(&[(written[0].0, 0, &message("zebracorn sightings", 0))]);
        assert_eq!((hits(&turns, "zebracorn"), hits(&turns, "apples")), (1, 0));
        // Fed with a row missing before it: ignored, and the sync reads
        // both rows as stored.
        let a = p.store().put_messages(&[message("pears are green", 1)]).unwrap();
        let b = p.store().put_messages(&[message("plums are purple", 2)]).unwrap();
        turns.feed_messages(&[(b[0].0, 2, &message("unicornfish", 2))]);
        assert_eq!(a[0].0 + 1, b[0].0);
        assert_eq!((hits(&turns, "unicornfish"), hits(&turns, "pears"), hits(&turns, "plums")), (0, 1, 1));
    });
}

#[test]
fn test_a_directory_fed_by_ingest_equals_one_read_from_the_rows() {
    use agent_memory::core::api::{IngestRequest, RememberRequest};
    use agent_memory::core::model::MessageInput;
    use agent_memory::core::recall::directory::TurnDirectory;
    let sql = database();
    let kept = TurnDirectory::new();
    let say = |role: &str, content: &str| MessageInput { role: role.into(), content: content.into(), timestamp: Some("2026-04-14T09:00:00.000Z".into()) };
    let calls: Vec<IngestRequest> = vec![
        IngestRequest {
            session_id: Some("a".into()),
            messages: vec![say("user", "Use pnpm, not npm."), say("assistant", "Got it, pnpm it is.")],
            metadata: Default::default(),
        },
        IngestRequest {
            session_id: Some("b".into()),
            messages: vec![say("user", "Actually we moved to yarn last week."), say("user", "My dog Rex turned three yesterday.")],
            metadata: Default::default(),
        },
        IngestRequest {
            session_id: Some("a".into()),
            messages: vec![say("user", "Use pnpm, not npm."), say("user", "Deploys go out on Tuesdays.")],
            metadata: Default::default(),
        },
    ];
    for (i, call) in calls.into_iter().enumerate() {
        support::with_profile_in(&sql, APRIL_15 + i as i64 * 1000, &kept, |p| {
            support::block_on(p.ingest(call)).unwrap();
            let r: RememberRequest =
                serde_json::from_value(serde_json::json!({ "content": format!("Standup moved to {} am.", 9 + i), "key": "process.standup_time" })).unwrap();
            support::block_on(p.remember(r)).unwrap();
        });
    }
    assert!(kept.sync(&sql).unwrap().memories().text().len() >= 6, "memories were stored");
    assert_eq!(*kept.sync(&sql).unwrap(), *TurnDirectory::new().sync(&sql).unwrap());
}

#[test]
fn test_a_word_said_a_thousand_times_in_a_memory_scores_as_fts5_scores_it_and_survives_a_snapshot() {
    use agent_memory::core::recall::directory::{TurnDirectory, MEMORY_WEIGHTS, SNAPSHOT_MIN};
    // A posting keeps ten bits a column of a memory (content, key,
    // search queries): counts at and past 1,023 are kept whole beside it.
    let sql = database();
    let mut rng = Rng(0x0f1e_4c07_7a11_0b5e);
    let mut mems = memories(&mut rng, SNAPSHOT_MIN + 100);
    let said = |word: &str, n: usize| vec![word; n].join(" ");
    for (i, (content_n, query_n)) in [(1022, 0), (1023, 1), (1024, 1023), (1500, 2000), (3000, 5), (7, 1100)].into_iter().enumerate() {
        let m = &mut mems[i * 37];
        m.content = format!("{} zephyr {}", said("parrot", content_n), m.content);
        m.summary = m.content.clone();
        m.search_queries = vec![said("parrot", query_n), "quokka".into()];
    }
    let built = TurnDirectory::new();
    support::with_profile_in(&sql, APRIL_15, &built, |p| {
        let items: Vec<(&agent_memory::core::model::Memory, &str)> = mems.iter().map(|m| (m, m.id.as_str())).collect();
        p.store().insert_memories(&items).unwrap();
        FullText::Memories.catch_up(p.sql).unwrap();
        assert!(p.turns.unwrap().maintain(p.sql).unwrap(), "a snapshot is written");
    });
    let cold = TurnDirectory::new();
    assert!(*cold.sync(&sql).unwrap() == *built.sync(&sql).unwrap() && cold.from_snapshot(), "the snapshot keeps the whole counts");
    for dir in [&built, &cold] {
        let dir = dir.sync(&sql).unwrap();
        for words in [vec!["parrot"], vec!["parrot", "zephyr"], vec!["quokka", "parrot"]] {
            let words: Vec<String> = words.into_iter().map(String::from).collect();
            let phrases = agent_memory::core::recall::query::phrases(&words);
            let ours = by_rowid(&dir, dir.memories().text().bm25(&phrases, MEMORY_WEIGHTS, usize::MAX).unwrap());
            let theirs: Vec<(i64, f64)> = fts5_memory_scores(&sql, &words);
            assert_eq!(theirs.len(), 6, "{words:?}");
            assert_eq!(ours, theirs, "{words:?}");
        }
    }
}

/// SQL that counts the full-text tables' catch-up checks
/// (`FullText::catch_up` asks for each table's highest indexed rowid).
struct CatchUps<'a> {
    inner: &'a dyn Sql,
    checks: std::cell::RefCell<Vec<String>>,
}

impl Sql for CatchUps<'_> {
    fn query(&self, sql: &str, params: &[SqlValue]) -> agent_memory::core::error::Result<Vec<agent_memory::core::ports::Row>> {
        for table in ["messages_fts", "memories_fts"] {
            if sql.contains(&format!("SELECT rowid FROM {table} ORDER BY rowid DESC LIMIT 1")) {
                self.checks.borrow_mut().push(table.to_string());
            }
        }
        self.inner.query(sql, params)
    }
    fn transaction(&self, f: &mut dyn FnMut() -> agent_memory::core::error::Result<()>) -> agent_memory::core::error::Result<()> {
        self.inner.transaction(f)
    }
    fn database_size(&self) -> i64 {
        self.inner.database_size()
    }
}

#[test]
fn test_a_recall_on_sqlite_alone_catches_each_full_text_table_up_once_and_sees_what_waited() {
    use agent_memory::core::api::{IngestRequest, RecallRequest};
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        let messages = ["I moved the billing service to Oslo last week.", "Which editor do you use?", "I use VS Code for the frontend and Vim on servers."]
            .iter()
            .map(|c| support::msg("user", c))
            .collect();
        support::block_on(p.ingest(IngestRequest { messages, session_id: Some("s1".into()), metadata: Default::default() })).unwrap();
    });
    // Nothing drained: the ingest's rows wait for their full-text rows.
    let waiting = sql.query("SELECT (SELECT COUNT(*) FROM messages) - (SELECT COUNT(*) FROM messages_fts)", &[]).unwrap()[0][0].as_i64();
    assert!(waiting.is_some_and(|n| n > 0), "the messages wait for their full-text rows");
    let counted = CatchUps { inner: &sql, checks: Default::default() };
    // Own words, an expansion ("city"), stop words: up to six full-text
    // queries, two tables.
    let req: RecallRequest = serde_json::from_value(serde_json::json!({ "query": "Which city did I move the billing service to?" })).unwrap();
    let r = support::with_nothing_resident(&counted, APRIL_15, Default::default(), |p| support::block_on(p.recall(req))).unwrap();
    assert!(r.candidates.iter().any(|c| c.summary.contains("Oslo")), "what waited is found: {:?}", r.candidates);
    let mut checks = counted.checks.borrow().clone();
    checks.sort();
    assert_eq!(checks, ["memories_fts", "messages_fts"], "each table is caught up once");
}

/// A user's message `i` of session "s", saying `content`.
fn said(i: usize, content: &str) -> Message {
    Message {
        id: format!("msg_{i:06}"),
        session_id: "s".into(),
        role: "user".into(),
        content: content.into(),
        timestamp: None,
        position: i as i64,
        created_at: "2026-04-15T10:00:00Z".into(),
        metadata: Default::default(),
    }
}

/// How many rows of `messages_fts` match `word` as a phrase.
fn fts_count(sql: &support::NativeSql, word: &str) -> i64 {
    let rows = sql.query("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?1", &[SqlValue::Text(format!("\"{word}\""))]).unwrap();
    rows[0][0].as_i64().unwrap()
}

/// A profile whose full-text rows were written before index forms (a run
/// of Chinese or Japanese letters one token): the object's start writes
/// them again in their index form, once, so a word of the run finds them
/// in SQLite as in the index built in memory from the same rows.
#[test]
fn test_full_text_rows_written_before_index_forms_are_written_again_once() {
    let sql = database();
    // Pages of rows to write again (INDEX_FORM_PAGE, 32).
    let mut stored = vec![said(0, "我住在上海，我是一名软件工程师。"), said(1, "I live in Lisbon.")];
    stored.extend((2..300).map(|i| said(i, &format!("第{i}号：我喜欢简洁的回答。"))));
    with_profile(&sql, APRIL_15, |p| p.store().put_messages(&stored).unwrap());
    FullText::Messages.catch_up(&sql).unwrap();
    // As a build before index forms wrote them: the texts as they are.
    sql.execute("DELETE FROM messages_fts", &[]).unwrap();
    sql.execute("INSERT INTO messages_fts (rowid, role, content) SELECT rowid, role, content FROM messages", &[]).unwrap();
    let found = |word: &str| fts_count(&sql, word);
    assert_eq!((found("上海"), found("简洁"), found("lisbon")), (0, 0, 1), "before: only the whole run is a word");
    // A snapshot of the directory, as a large profile keeps one: its words
    // are the old ones.
    sql.execute("INSERT INTO directory_snapshot (part, data) VALUES (1, x'00')", &[]).unwrap();
    with_profile(&sql, APRIL_15, |p| p.migrate().unwrap());
    assert_eq!((found("上海"), found("工程"), found("简洁"), found("lisbon")), (1, 1, 298, 1), "after: its pairs of letters are words");
    let snapshot = sql.query("SELECT count(*) FROM directory_snapshot", &[]).unwrap();
    assert_eq!(snapshot[0][0].as_i64(), Some(0), "the directory is built again from the rows");
    let meta = with_profile(&sql, APRIL_15, |p| p.store().meta_get(agent_memory::core::store::META_INDEX_FORMS).unwrap());
    assert_eq!(meta.as_deref(), Some(agent_memory::core::store::INDEX_FORMS_VERSION), "done once");
    // Once: a row written the old way since is left as it is.
    sql.execute("DELETE FROM messages_fts WHERE rowid = 1", &[]).unwrap();
    sql.execute("INSERT INTO messages_fts (rowid, role, content) SELECT rowid, role, content FROM messages WHERE rowid = 1", &[]).unwrap();
    with_profile(&sql, APRIL_15, |p| p.migrate().unwrap());
    assert_eq!(found("上海"), 0, "the rows are read once, not at every start");
}

/// SQLite's `GLOB` reads a text up to its first NUL: a message saying
/// "\0我住在北京" was indexed plainly, its Chinese words found in the index
/// built in memory and not by FTS5. The choice reads the whole text.
#[test]
fn test_a_nul_before_chinese_letters_does_not_keep_the_row_from_its_index_form() {
    let sql = database();
    let stored = [said(0, "\u{0}我住在北京。"), said(1, "ok\u{0}我的猫叫小花。"), said(2, "我住在上海。")];
    with_profile(&sql, APRIL_15, |p| p.store().put_messages(&stored).unwrap());
    FullText::Messages.catch_up(&sql).unwrap();
    let found = |word: &str| fts_count(&sql, word);
    assert_eq!((found("北京"), found("小花"), found("上海")), (1, 1, 1));
    // The same choice when rows are written again.
    sql.execute("DELETE FROM messages_fts", &[]).unwrap();
    sql.execute("INSERT INTO messages_fts (rowid, role, content) SELECT rowid, role, content FROM messages", &[]).unwrap();
    sql.execute("DELETE FROM meta WHERE key LIKE 'index_forms%'", &[]).unwrap();
    with_profile(&sql, APRIL_15, |p| p.migrate().unwrap());
    assert_eq!((found("北京"), found("小花"), found("上海")), (1, 1, 1), "written again");
}

/// A profile whose index forms were written by the first version (Chinese
/// and Japanese letters in pairs, Korean as it is): its Korean rows are
/// written again, once, its others come out the same.
#[test]
fn test_korean_rows_of_the_first_index_forms_are_written_again_in_pairs() {
    let sql = database();
    let mut stored = vec![said(0, "저는 서울에 살고 있습니다."), said(1, "我住在上海。"), said(2, "I live in Lisbon.")];
    stored.extend((3..100).map(|i| said(i, &format!("{i}번: 짧은 답변을 좋아해요."))));
    with_profile(&sql, APRIL_15, |p| p.store().put_messages(&stored).unwrap());
    FullText::Messages.catch_up(&sql).unwrap();
    // As the first version left it: Korean rows as they are, its
    // progress a bare rowid.
    sql.execute("DELETE FROM messages_fts WHERE content GLOB '*[가-힯]*'", &[]).unwrap();
    sql.execute("INSERT INTO messages_fts (rowid, role, content) SELECT rowid, role, content FROM messages WHERE content GLOB '*[가-힯]*'", &[]).unwrap();
    for (k, v) in [("index_forms_written", "1"), ("index_forms_messages_through", "100"), ("index_forms_memories_through", "0")] {
        sql.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", &[SqlValue::Text(k.into()), SqlValue::Text(v.into())]).unwrap();
    }
    let found = |word: &str| fts_count(&sql, word);
    assert_eq!((found("서울"), found("답변"), found("上海"), found("lisbon")), (0, 0, 1, 1), "before: a Korean word is one with its particles");
    with_profile(&sql, APRIL_15, |p| p.migrate().unwrap());
    assert_eq!((found("서울"), found("답변"), found("上海"), found("lisbon")), (1, 97, 1, 1), "after: its pairs of letters are words");
    let rows = sql.query("SELECT count(*) FROM messages_fts", &[]).unwrap();
    assert_eq!(rows[0][0].as_i64(), Some(100), "each row once");
    let meta = with_profile(&sql, APRIL_15, |p| p.store().meta_get(agent_memory::core::store::META_INDEX_FORMS).unwrap());
    assert_eq!(meta.as_deref(), Some("2"));
}
