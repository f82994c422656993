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

/// FNV-1a: fast and stable across platforms. Features are hashed as
/// their bytes (a word; `3:` then a trigram of `#word#`; two words joined
/// by a space), fed piecewise so no feature string is built.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    const START: Fnv = Fnv(0xcbf29ce484222325);

    fn feed(mut self, bytes: &[u8]) -> Fnv {
        for b in bytes {
            self.0 ^= *b as u64;
            self.0 = self.0.wrapping_mul(0x100000001b3);
        }
        self
    }

    fn add_to(self, v: &mut [f32], weight: f32) {
        let sign = if self.0 >> 63 == 1 { -1.0 } else { 1.0 };
        // The remainder is below DIMS = v.len(): the bucket always exists.
        if let Some(x) = self.0.checked_rem(DIMS as u64).and_then(|i| v.get_mut(i as usize)) {
            *x += sign * weight;
        }
    }
}

/// Embeds one text.
pub fn embed_one(s: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIMS];
    let stems = text::stems(s);
    let mut padded: Vec<char> = Vec::new();
    for w in &stems {
        Fnv::START.feed(w.as_bytes()).add_to(&mut v, WORD_WEIGHT);
        padded.clear();
        padded.push('#');
        padded.extend(w.chars());
        padded.push('#');
        for t in padded.windows(3) {
            let mut h = Fnv::START.feed(b"3:");
            for c in t {
                h = h.feed(c.encode_utf8(&mut [0u8; 4]).as_bytes());
            }
            h.add_to(&mut v, TRIGRAM_WEIGHT);
        }
    }
    for (a, b) in stems.iter().zip(stems.iter().skip(1)) {
        Fnv::START.feed(a.as_bytes()).feed(b" ").feed(b.as_bytes()).add_to(&mut v, PAIR_WEIGHT);
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
    crate::core::ids::hex(Sha256::digest(s.as_bytes()).iter().take(8))
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

    /// The first implementation, feature strings built with `format!`:
    /// the allocation-free one must give the very same vectors.
    fn reference(s: &str) -> Vec<f32> {
        fn bucket(feature: &str) -> (usize, f32) {
            let mut h: u64 = 0xcbf29ce484222325;
            for b in feature.bytes() {
                h ^= b as u64;
                h = h.wrapping_mul(0x100000001b3);
            }
            let sign = if h >> 63 == 1 { -1.0 } else { 1.0 };
            ((h % DIMS as u64) as usize, sign)
        }
        let mut v = vec![0f32; DIMS];
        let stems = text::stems(s);
        for w in &stems {
            let (i, sign) = bucket(w);
            v[i] += sign * WORD_WEIGHT;
            let chars: Vec<char> = format!("#{w}#").chars().collect();
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

    #[test]
    fn test_embedding_matches_the_reference_implementation() {
        for t in ["The user prefers pnpm", "Caroline went to the LGBTQ support group on 2023-05-07.", "Ünïcödé naïve café, 東京 x", "", "a"] {
            assert_eq!(embed_one(t), reference(t), "{t}");
        }
    }

    #[test]
    fn test_related_texts_are_closer_than_unrelated() {
        let q = embed_one("What package manager does the user prefer?");
        let near = embed_one("The user prefers pnpm as package manager");
        let far = embed_one("Dark mode is enabled by default");
        assert!(cos(&q, &near) > cos(&q, &far));
    }
}
