//! Local implementations of the model-free ports: the embedded defaults
//! that make `wrangler dev` work with no account and no network.

/// Benchmark operations: only in a build with the `bench` feature
/// (`make bench`), never in the production Wasm.
#[cfg(feature = "bench")]
pub mod bench;
pub mod embed;
pub mod vector;
