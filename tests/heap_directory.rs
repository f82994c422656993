//! What a warm profile's turn directory keeps after an ingest of mostly
//! new words (identifiers, hashes, random letters): each distinct word
//! costs its text indexes tens of bytes, so such text took twenty times
//! its bytes, in the Wasm memory every profile of an isolate shares. The
//! directory's owner bounds it to the isolate's budget
//! (`TurnDirectory::hold_within`): past it, its text indexes turn off and
//! recall asks SQLite's full-text tables, finding the same.
//!
//! One test in this binary: the allocator counts every thread's blocks.

mod support;

use agent_memory::core::api::IngestRequest;
use agent_memory::core::recall::directory::TurnDirectory;
use agent_memory::core::recall::RecallResponse;
use serde_json::json;
use support::heap::{self, live, peak, reset_peak};
use support::*;

#[global_allocator]
static ALLOC: heap::Counting = heap::Counting;

/// The budget the profiles of the isolate keep together, in this test.
const BUDGET_BYTES: usize = 8 << 20;

/// Messages of 32 KB of random five-letter words: about 2 MB.
const MESSAGES: usize = 64;

fn random_words(rng: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 8);
    let mut n = 0;
    while s.len() < bytes {
        s.extend((0..5).map(|_| (b'a' + rng.below(26) as u8) as char));
        n += 1;
        s.push_str(if n % 12 == 0 { ". " } else { " " });
    }
    s
}

#[test]
fn test_a_warm_directory_stays_within_the_budget_over_an_ingest_of_new_words() {
    let sql = database();
    let turns = TurnDirectory::new();
    turns.hold_within(BUDGET_BYTES);
    let mut rng = Rng(0x5eed_d1c7);
    let texts: Vec<String> = (0..MESSAGES).map(|_| random_words(&mut rng, 32 * 1024 - 16)).collect();
    let body_bytes: usize = texts.iter().map(String::len).sum();
    let probe = texts[MESSAGES - 1].split(' ').nth(3).unwrap().to_string();
    with_profile_in(&sql, APRIL_15, &turns, |p| {
        let req =
            IngestRequest { messages: vec![msg("user", "I prefer green tea in the morning.")], session_id: Some("warm".into()), metadata: Default::default() };
        block_on(p.ingest(req)).unwrap();
        block_on(p.dispatch("recall", json!({ "query": "tea" }))).unwrap();
        assert!(turns.is_loaded(), "warm");
        let start = live();
        reset_peak();
        let messages = texts.iter().map(|t| msg("user", t)).collect();
        block_on(p.ingest(IngestRequest { messages, session_id: Some("dump".into()), metadata: Default::default() })).unwrap();
        block_on(p.dispatch("drain", json!({}))).unwrap();
        let held = turns.heap_bytes();
        let rise = peak().saturating_sub(start);
        eprintln!(
            "{MESSAGES} messages, {:.1} MiB of text: the directory holds {:.1} MiB (budget {:.0} MiB), the heap rose {:.1} MiB",
            body_bytes as f64 / 1048576.0,
            held as f64 / 1048576.0,
            BUDGET_BYTES as f64 / 1048576.0,
            rise as f64 / 1048576.0
        );
        assert!(held <= BUDGET_BYTES, "the directory holds {held} bytes over a budget of {BUDGET_BYTES}");
        assert!(rise <= BUDGET_BYTES + 8 * body_bytes, "the heap rose {rise} bytes over a {body_bytes}-byte ingest");
        // Its text indexes off, recall finds what SQLite's tables hold.
        let r: RecallResponse = serde_json::from_str(&block_on(p.dispatch_json("recall", json!({ "query": probe }))).unwrap()).unwrap();
        assert!(r.candidates.iter().any(|c| c.summary.contains(&probe)), "{probe}: {:?}", r.candidates.iter().map(|c| &c.summary).collect::<Vec<_>>());
    });
}
