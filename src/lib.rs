//! agent-memory: a memory service for AI agents that runs at the edge.
//!
//! The crate has two halves:
//!
//! * [`core`] is plain Rust. It holds every pipeline (ids, transcripts,
//!   chunking, date resolution, extraction, verification, classification,
//!   supersession, query analysis, retrieval channels, fusion, temporal
//!   arithmetic, synthesis prompts) and the profile store. It talks to the
//!   outside world only through the small traits in [`core::ports`], so it
//!   compiles and is tested natively with `cargo test`.
//! * `cloudflare` (wasm32 only) is the platform glue: the Worker's fetch
//!   handler, the profile Durable Object, and adapters that implement the
//!   ports with Durable Object SQL, Workers AI and Vectorize.
//!
//! What the crate does *not* do: it does not run models itself (the local
//! provider is rule-based), it does not persist anything outside a
//! profile's own SQLite database and the configured vector index, and it
//! never takes the tenant a caller may touch from a request body.

pub mod core;

#[cfg(target_arch = "wasm32")]
mod cloudflare;
