//! The in-Worker embedder: deterministic feature hashing, no network, no
//! weights. Each text becomes a sum of signed hashed features (stemmed
//! words, word pairs, character trigrams of words), L2-normalized.
//!
//! It captures lexical and morphological overlap, not meaning: "car" and
//! "automobile" are unrelated to it. That is the honest limit of a
//! model-free embedder; configure Workers AI or an OpenAI-compatible
//! endpoint for semantic vectors.

use crate::core::error::Result;
use crate::core::ports::{Embedder, LocalBoxFuture};
use crate::core::text;
use sha2::{Digest, Sha256};

/// Dimensions of local vectors.
pub const DIMS: usize = 256;
const WORD_WEIGHT: f32 = 1.0;
const PAIR_WEIGHT: f32 = 0.5;
const TRIGRAM_WEIGHT: f32 = 0.25;

#[derive(Clone, Copy, Debug, Default)]
pub struct HashEmbedder;

fn bucket(feature: &str) -> (usize, f32) {
    // FNV-1a: fast and stable across platforms.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in feature.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
    ((h % DIMS as u64) as usize, sign)
}

/// Embeds one text.
pub fn embed_one(s: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIMS];
    let stems = text::stems(s);
    for w in &stems {
        let (i, sign) = bucket(w);
        v[i] += sign * WORD_WEIGHT;
        let padded = format!("#{w}#");
        let chars: Vec<char> = padded.chars().collect();
        for t in chars.windows(3) {
            let (i, sign) = bucket(&format!("3:{}", t.iter().collect::<String>()));
            v[i] += sign * TRIGRAM_WEIGHT;
        }
    }
    for p in stems.windows(2) {
        let (i, sign) = bucket(&format!("{} {}", p[0], p[1]));
        v[i] += sign * PAIR_WEIGHT;
    }
    normalize(&mut v);
    v
}

pub fn normalize(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

impl Embedder for HashEmbedder {
    fn embed<'a>(&'a self, texts: &'a [String]) -> LocalBoxFuture<'a, Result<Vec<Vec<f32>>>> {
        Box::pin(async move { Ok(texts.iter().map(|t| embed_one(t)).collect()) })
    }
}

/// A content digest, used to tell vectors of changed texts apart.
pub fn digest(s: &str) -> String {
    crate::core::ids::hex(&Sha256::digest(s.as_bytes())[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn test_embedding_is_deterministic_and_normalized() {
        let a = embed_one("The user prefers pnpm");
        assert_eq!(a, embed_one("The user prefers pnpm"));
        assert!((cos(&a, &a) - 1.0).abs() < 1e-5);
    }

    #[test]
    fn test_related_texts_are_closer_than_unrelated() {
        let q = embed_one("What package manager does the user prefer?");
        let near = embed_one("The user prefers pnpm as package manager");
        let far = embed_one("Dark mode is enabled by default");
        assert!(cos(&q, &near) > cos(&q, &far));
    }
}
