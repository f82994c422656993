//! Local implementations of the model-free ports: the embedded defaults
//! that make `wrangler dev` work with no account and no network.

pub mod bench;
pub mod embed;
pub mod vector;
