//! What one very long "word" costs an ingest's heap: a hex dump or a run
//! of CJK text without spaces is one token of tens of thousands of
//! letters. Every profile of an isolate shares one Wasm memory that never
//! shrinks, so no step may cost the square of a token's length. Counted
//! natively with a counting allocator.
//!
//! One test in this binary: the allocator counts every thread's blocks.

mod support;

use agent_memory::core::api::IngestRequest;
use support::heap::{self, live, peak, reset_peak};
use support::*;

#[global_allocator]
static ALLOC: heap::Counting = heap::Counting;

/// The most the heap may rise over the ingest of a 32 KB message that is
/// one word: a few copies of the message and its statements. Each start
/// of the word kept as a string of its own (the rule-based extractor's
/// echo test) took 490 MiB.
const MAX_RISE_BYTES: usize = 16 << 20;

#[test]
fn test_a_message_of_one_32kb_word_costs_the_ingest_a_few_copies_not_the_square() {
    let word = "a".repeat(32_000);
    // Nine messages: the detail pass reads them in windows, where the
    // agent's reply is tested as an echo of the long line.
    let mut messages = vec![msg("user", &format!("Alpha beta gamma {word}.")), msg("assistant", "Delta epsilon zeta.")];
    messages.extend((0..7).map(|i| msg(if i % 2 == 0 { "user" } else { "assistant" }, &format!("Short message number {i} about the garden."))));
    let req = IngestRequest { messages, session_id: Some("long-word".into()), metadata: Default::default() };
    let sql = database();
    let rise = with_profile(&sql, APRIL_15, |p| {
        let start = live();
        reset_peak();
        let report = block_on(p.ingest(req)).unwrap();
        assert!(!report.memories.is_empty(), "the short messages are still extracted");
        peak().saturating_sub(start)
    });
    eprintln!("heap rise over the ingest: {:.1} MiB", rise as f64 / (1 << 20) as f64);
    assert!(rise <= MAX_RISE_BYTES, "the heap rose {rise} bytes over a 32 KB ingest");
}
