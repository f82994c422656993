//! The pure core: no `worker` types; `cargo test` runs all of it natively.
//!
//! Folders, in the order data flows:
//! * `api`: request records, limits, validation (every way in parses here);
//! * `ops`: the profile operations and the one dispatch table;
//! * `ingest/`: the ingest pipeline, one file per stage;
//! * `recall/`: the recall pipeline, one file per stage;
//! * `rules/`: the rule-based reasoner (the local default);
//! * `llm`: the language-model reasoner over any `ChatModel`;
//! * `local/`: the in-Worker embedder and the SQLite vector index;
//! * `store`, `schema`: the profile database;
//! * `catalog`: which namespaces exist and the profiles each holds;
//! * `background`: the outbox drain the alarm runs.

// No panic reachable from input: outside tests, the core neither unwraps
// nor indexes unchecked nor lets arithmetic overflow. `make lint` runs
// these (cargo clippy --lib); an exception is an `#[allow]` on the item,
// with the reason beside it.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing, clippy::arithmetic_side_effects))]

pub mod api;
pub mod background;
pub mod catalog;
pub mod consolidate;
pub mod context;
pub mod contract;
pub mod dates;
pub mod error;
pub mod filter;
pub mod ids;
pub mod ingest;
pub mod jobs;
pub mod json;
pub mod llm;
pub mod local;
pub mod mcp;
pub mod model;
pub mod op;
pub mod ops;
pub mod portable;
pub mod ports;
pub mod provider;
pub mod recall;
pub mod remember;
pub mod resident;
pub mod rest;
pub mod rules;
pub mod running;
pub mod schema;
pub mod store;
pub mod summary;
pub mod synthesis;
pub mod text;
pub mod time;
pub mod turns;
pub mod wire;
