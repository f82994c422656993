//! The recall pipeline (SPEC.md section 4), as a list of calls:
//! analyze and embed concurrently, run the five channels, fuse, compute
//! temporal facts, synthesize.

pub mod channels;
pub mod directory;
pub mod fuse;
pub mod parts;
pub mod places;
pub mod porter;
pub mod temporal;
pub mod text_index;
pub mod unicode61;

use crate::core::api::RecallRequest;
use crate::core::error::Result;
use crate::core::model::{Memory, MemoryType};
use crate::core::context::Profile;
use crate::core::provider::{QueryAnalysis, SynthesisInput};
use crate::core::recall::places::Source;
use crate::core::time::{date_of, iso};
use fuse::{Channel, Contribution, Ranking};
use serde::{Deserialize, Serialize};

/// A ranked memory in a recall response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecallCandidate {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: MemoryType,
    pub summary: String,
    pub session_id: String,
    pub score: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_date: Option<String>,
    pub source_message_ids: Vec<String>,
    /// Present with `explain: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Vec<Contribution>>,
}

/// What `recall` returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecallResponse {
    pub result: String,
    /// Same as `result`; both names are in use.
    pub answer: String,
    pub count: usize,
    pub candidates: Vec<RecallCandidate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<Explain>,
    /// Notes on degraded channels or stages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<String>,
}

/// The explanation tree of a recall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Explain {
    pub analysis: QueryAnalysis,
    /// Every channel, with the ids it ranked (best first).
    pub channels: Vec<ChannelReport>,
    pub k: f64,
    pub temporal_facts: Vec<String>,
    pub reference_date: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelReport {
    pub channel: Channel,
    pub weight: f64,
    pub ids: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Cosine at or above which the HyDE embedding counts as the query's own.
pub const HYDE_SAME_AS_QUERY: f32 = 0.99;

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let n = norm(a) * norm(b);
    if n == 0.0 {
        0.0
    } else {
        dot / n
    }
}

/// What the full-text channels search for: the query's words and the
/// analyzer's `terms`, in a profile whose speakers `src` knows.
pub fn text_query(sql: &dyn crate::core::ports::Sql, src: Source<'_>, query: &str, terms: &[String], reference: chrono::NaiveDate) -> Result<channels::TextQuery> {
    Ok(channels::TextQuery::new(query, terms, reference).with_speakers(&src.speakers(sql)?))
}

pub async fn run(p: &Profile<'_>, req: RecallRequest) -> Result<RecallResponse> {
    let opts = &req.options;
    let include_inactive = opts.include_inactive.unwrap_or(false);
    let limit = opts.limit.unwrap_or(crate::core::api::DEFAULT_RECALL_LIMIT);
    let reference = opts
        .reference_date
        .as_deref()
        .and_then(date_of)
        .unwrap_or_else(|| chrono::DateTime::from_timestamp_millis(p.now).unwrap_or_default().date_naive());
    let now_iso = iso(p.now);
    let mut notes = Vec::new();

    // 1. Query analysis, then both embeddings in one batch.
    let analysis = match p.reasoner.analyze(&req.query).await {
        Ok(a) => a,
        Err(e) => {
            notes.push(format!("query analysis failed, using the raw query: {e}"));
            QueryAnalysis { terms: crate::core::text::content_words(&req.query), ..QueryAnalysis::default() }
        }
    };
    let texts = vec![req.query.clone(), if analysis.hyde.is_empty() { req.query.clone() } else { analysis.hyde.clone() }];
    let embeddings: Option<[Vec<f32>; 2]> = match p.embedder.embed(&texts).await.map(<[Vec<f32>; 2]>::try_from) {
        Ok(Ok(v)) => Some(v),
        Ok(Err(_)) => {
            notes.push("embedder returned the wrong number of vectors; vector channels skipped".into());
            None
        }
        Err(e) => {
            notes.push(format!("embedder failed; vector channels skipped: {e}"));
            None
        }
    };

    // 2. The five channels. A failing channel is reported, not fatal.
    let mut reports = Vec::new();
    let mut rankings = Vec::new();
    let mut record = |channel: Channel, r: Result<Ranking>, notes: &mut Vec<String>| match r {
        Ok(r) => {
            reports.push(ChannelReport { channel, weight: channel.weight(), ids: r.ids.clone(), error: None });
            rankings.push(r);
        }
        Err(e) => {
            notes.push(format!("channel {} failed: {e}", channel.name()));
            reports.push(ChannelReport { channel, weight: channel.weight(), ids: vec![], error: Some(e.to_string()) });
        }
    };
    // Both full-text channels read one scoring of the messages, and the
    // memories citing the best of them, from the directory when the
    // profile keeps one, else from SQLite (the same answers). (The
    // directory is lent out only here: no await while it is borrowed.)
    let text_channels = |src: Source<'_>| -> Result<(Result<Ranking>, Ranking)> {
        let q = text_query(p.sql, src, &req.query, &analysis.terms, reference)?;
        let turns = channels::score_turns(p.sql, src, &q)?;
        let cites = channels::citations(p.sql, &turns, include_inactive, &now_iso)?;
        let fts = channels::fts_with(p.sql, src, &q, &turns, &cites, include_inactive, &now_iso);
        Ok((fts, channels::messages_with(&q, &turns, &cites).0))
    };
    let key = channels::key(p.sql, &analysis.keys, include_inactive, &now_iso);
    let text = places::with_source(p.sql, p.turns, text_channels);
    record(Channel::Key, key, &mut notes);
    match text {
        Ok((fts, messages)) => {
            record(Channel::Fts, fts, &mut notes);
            record(Channel::Messages, Ok(messages), &mut notes);
        }
        Err(e) => {
            record(Channel::Fts, Err(e.clone()), &mut notes);
            record(Channel::Messages, Err(e), &mut notes);
        }
    }
    match &embeddings {
        Some([direct, hyde]) => {
            // A HyDE statement that embeds like the query itself would
            // only repeat the direct channel and count its evidence twice:
            // the HyDE channel then reports no hits. (The rule-based
            // analyzer's "the {topic} is" embeds like the topic words.)
            let hyde_repeats = cosine(direct, hyde) >= HYDE_SAME_AS_QUERY;
            let mut asked = vec![(Channel::Vector, direct.clone())];
            if !hyde_repeats {
                asked.push((Channel::Hyde, hyde.clone()));
            }
            match channels::vectors(p.sql, p.index, &asked, include_inactive, &now_iso).await {
                Ok(rankings) => {
                    // One ranking per channel asked, in order.
                    let mut rankings = rankings.into_iter();
                    let missing = || crate::core::error::Error::provider("the vector index returned too few rankings");
                    let vector = rankings.next().ok_or_else(missing);
                    let hyde = if hyde_repeats { Ok(Ranking::new(Channel::Hyde, vec![])) } else { rankings.next().ok_or_else(missing) };
                    record(Channel::Vector, vector, &mut notes);
                    record(Channel::Hyde, hyde, &mut notes);
                }
                Err(e) => {
                    record(Channel::Vector, Err(e.clone()), &mut notes);
                    record(Channel::Hyde, Err(e), &mut notes);
                }
            }
        }
        None => {
            record(Channel::Vector, Err(crate::core::error::Error::provider("no query embedding")), &mut notes);
            record(Channel::Hyde, Err(crate::core::error::Error::provider("no query embedding")), &mut notes);
        }
    }

    // 3. Fuse.
    let mut fused = fuse::fuse(&rankings);
    fused.truncate(limit);
    let store = p.store();
    let by_id: std::collections::HashMap<String, Memory> =
        store.memories_by_ids(&fused.iter().map(|f| f.id.clone()).collect::<Vec<_>>())?.into_iter().map(|m| (m.id.clone(), m)).collect();
    let ranked: Vec<(Memory, fuse::Fused)> = fused.into_iter().filter_map(|f| by_id.get(&f.id).cloned().map(|m| (m, f))).collect();

    // 4. Temporal facts.
    let evidence: Vec<temporal::Dated> = ranked
        .iter()
        .filter_map(|(m, _)| {
            let date = m.event_date.as_deref().and_then(date_of)?;
            Some(temporal::Dated { label: m.summary.clone(), date })
        })
        .collect();
    let computed = temporal::compute(&req.query, reference, &evidence);

    // 5. Synthesis.
    let input = SynthesisInput {
        query: req.query.clone(),
        memories: ranked.iter().map(|(m, _)| m.clone()).collect(),
        temporal_facts: computed.facts.clone(),
        reference_date: reference.format("%Y-%m-%d").to_string(),
        length: opts.response_length.unwrap_or_default(),
        computed_answer: computed.answer.clone(),
    };
    let result = if ranked.is_empty() && computed.answer.is_none() {
        String::new()
    } else {
        match p.reasoner.synthesize(&input).await {
            Ok(s) => s,
            Err(e) => {
                notes.push(format!("synthesis failed, answering extractively: {e}"));
                crate::core::synthesis::extractive(&input)
            }
        }
    };
    let explain_on = opts.explain.unwrap_or(false);
    let candidates: Vec<RecallCandidate> = ranked
        .into_iter()
        .map(|(m, f)| RecallCandidate {
            id: m.id,
            kind: m.kind,
            summary: m.summary,
            session_id: m.session_id,
            score: f.score,
            event_date: m.event_date,
            source_message_ids: m.source_message_ids,
            trace: explain_on.then_some(f.trace),
        })
        .collect();
    Ok(RecallResponse {
        answer: result.clone(),
        result,
        count: candidates.len(),
        candidates,
        explain: explain_on.then(|| Explain {
            analysis,
            channels: reports,
            k: fuse::K,
            temporal_facts: computed.facts,
            reference_date: reference.format("%Y-%m-%d").to_string(),
        }),
        messages: notes,
    })
}
