//! The five retrieval channels: what each reads from the store (or the
//! profile's turn directory and vector index), handed to
//! [`crate::core::recall::score`] to be ranked. Each returns memory ids,
//! best first:
//!
//! 1. full text over memories, in their conversation ([`fts_with`]);
//! 2. exact topic keys ([`key`]);
//! 3. full text over raw messages ([`messages`], ranked by [`score::messages_with`]);
//! 4. and 5. vector search, direct or HyDE ([`vectors`]).
//!
//! The two full-text channels share one scoring of the raw turns
//! ([`score_turns`]) and one reading of the memories citing the best of
//! them ([`citations`]). Nothing here weighs a text: the constants and
//! the formulas are `recall::score`'s, the query's words
//! `recall::query`'s.

use crate::core::error::{Error, Result};
use crate::core::ports::{Sql, SqlValue, VectorIndex};
use crate::core::recall::directory::MEMORY_WEIGHTS;
use crate::core::recall::fuse::{Channel, Explanation, Ranking};
use crate::core::recall::places::{Narrowed, Source};
use crate::core::recall::query::{phrases, query_phrases, TextQuery};
use crate::core::recall::scope::RecallScope;
use crate::core::recall::score::{
    self, Citations, CitingMemory, Depth, FoundMemory, Sources, SpokenSources, TurnScores, Words, EXPANSION_WEIGHT, MEMORY_FUNCTION_WEIGHT, MESSAGE_WEIGHTS,
    NEIGHBOUR_WINDOW,
};
use crate::core::store::{json_ids, json_param, json_rows, json_rows_paged};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The channels' depths at the default thinking level (a recall's own are
/// its [`RecallScope`]'s).
pub use crate::core::recall::scope::{CHANNEL_DEPTH, FTS_POOL};

/// How much of a text recall reads when it needs the words (defined with
/// the directory, which reads as much of each message).
pub use crate::core::recall::directory::TEXT_READ_CHARS;

/// Most of the analyzer's keys the key channel looks up.
const MAX_KEYS_SEARCHED: usize = 20;

/// A stored JSON list of ids (`memories.source_message_ids`).
fn id_list(v: Option<&str>) -> Result<Vec<String>> {
    json_ids(v, "source message ids")
}

/// A memory's row as [`memory_hits`] reads it: id, place in the best
/// list, event date, source message ids, content.
type PlacedRow = (String, usize, Option<String>, Option<String>, Option<String>);

/// The memories' own full-text scores for the query's words and, weighed
/// less, its expansions, summed per memory, with their columns: for each,
/// the best `2 x` [`FTS_POOL`] matches of any status by bm25, the live
/// ones among them kept, up to [`FTS_POOL`]. The best come from the
/// [`Source`] (the directory's memory index or SQLite's FTS5) and one
/// statement reads the memories' rows (their place in its list standing
/// for their score).
fn memory_hits(sql: &dyn Sql, src: Source<'_>, q: &TextQuery, scope: &RecallScope) -> Result<(HashMap<String, f64>, HashMap<String, FoundMemory>)> {
    let (cond, mut extra) = scope.visible(4);
    extra.insert(0, SqlValue::Integer(q.temporal as i64));
    let mut scores: HashMap<String, f64> = HashMap::default();
    let mut found: HashMap<String, FoundMemory> = HashMap::default();
    // The stop words count in the messages' scores only: in the memories'
    // own, at 100k memories, they cost most of a recall (their postings run
    // as long as the profile) for 0.002 of LoCoMo's recall@10.
    for (terms, weight) in [(&q.primary, 1.0), (&q.expansions, EXPANSION_WEIGHT)] {
        let phrases = query_phrases(q, terms);
        if phrases.is_empty() {
            continue;
        }
        let tested = |rowids: &[i64]| scope.passing_rowids(sql, rowids);
        let narrowed = match scope.ahead() {
            Some(ahead) => Some(Narrowed::Ahead(&ahead.rowids)),
            None => scope.narrowed().then_some(Narrowed::Tested(&tested)),
        };
        let best = src.memory_hits(sql, &phrases, MEMORY_WEIGHTS, scope.fts_pool().saturating_mul(2), narrowed)?;
        // The live rows among them, best first (their place in the list
        // stands for their score).
        let rowids: Vec<i64> = best.iter().map(|&(rowid, _)| rowid).collect();
        let mut params = vec![json_param(&rowids)?, SqlValue::Integer(scope.fts_pool() as i64)];
        params.extend(extra.iter().cloned());
        let placed: Vec<PlacedRow> = json_rows_paged(
            sql,
            &format!(
                "SELECT json_array(id, place, event_date, source_message_ids, content) AS r FROM ( \
                 SELECT m.id AS id, j.key AS place, m.event_date AS event_date, m.source_message_ids AS source_message_ids, \
                        CASE WHEN ?3 THEN substr(m.content, 1, {TEXT_READ_CHARS}) END AS content \
                 FROM json_each(?1) j CROSS JOIN memories m ON m.rowid = j.value WHERE {cond} ORDER BY j.key LIMIT ?2)"
            ),
            &params,
        )?;
        for (id, place, event_date, sources, content) in placed {
            let Some(&(rowid, bm25)) = best.get(place) else { continue };
            // bm25() is negative, lower is better.
            *scores.entry(id.clone()).or_insert(0.0) += -bm25 * weight;
            if let std::collections::hash_map::Entry::Vacant(e) = found.entry(id) {
                e.insert(FoundMemory { rowid, event_date, sources: id_list(sources.as_deref())?, content });
            }
        }
    }
    Ok((scores, found))
}

/// 1. FTS5 over memories, in their conversation. A memory scores by the
///    conversation it came from, its source message in context (see
///    [`score_turns`]), plus [`score::OWN_SHARE`] of its own bm25 (content weighs
///    most, then the key, then the search queries). A memory is one
///    statement; the turns around it say what it is about ("Yes, I
///    finished it last week!" answers "Did you finish the painting?"),
///    and its own words then tell it from its siblings. A memory without
///    a source message (remembered) is its own conversation, spoken by the
///    user: its own score counts in full, with the speaker, time and date
///    corrections applied to it. Ranked with one memory per source message
///    first (see [`score::diversify`]).
///
///    The memory's own bm25 ranks the best `2 x` [`FTS_POOL`] matches of
///    any status and keeps the live ones among them, up to [`FTS_POOL`]:
///    joining every match to its memory row before ranking would cost a
///    lookup per match. Scored by [`score::rank_memories`].
pub fn fts_with(sql: &dyn Sql, src: Source<'_>, q: &TextQuery, turns: &TurnScores, cites: &Citations, scope: &RecallScope) -> Result<Ranking> {
    let depth = Depth::of(scope);
    let (mut own, found) = memory_hits(sql, src, q, scope)?;
    // A question about a speaker ("Which company am I with at the
    // moment?") is matched by what they said, its stop words alone
    // reaching it; one about no speaker ("What is the capital of
    // France?") is not.
    let stop_words_only = found.is_empty() && !turns.worded && !q.about_a_speaker;
    let (candidates, sources) = score::candidates_of(&found, turns, cites, depth);
    add_function_words(sql, src, q, &candidates, &found, cites, &mut own)?;
    let spoken = spoken(sql, src, sources)?;
    Ok(Ranking { stop_words_only, ..score::rank_memories(q, turns, &candidates, &own, &found, &spoken, depth) })
}

/// Each memory's sources that are stored messages, with their speakers (a
/// memory left with none is dropped).
fn spoken(sql: &dyn Sql, src: Source<'_>, sources: Sources) -> Result<SpokenSources> {
    let roles = src.roles_of(sql, &sources.values().flatten().collect::<Vec<_>>())?;
    Ok(sources
        .into_iter()
        .map(|(id, srcs)| (id, srcs.into_iter().filter_map(|m| roles.get(&m).map(|r| (m, r.clone()))).collect::<Vec<_>>()))
        .filter(|(_, s)| !s.is_empty())
        .collect())
}

/// Adds to each candidate's own score its bm25 for the query's stop words
/// times [`MEMORY_FUNCTION_WEIGHT`], read for the candidates only (see
/// there).
fn add_function_words(
    sql: &dyn Sql,
    src: Source<'_>,
    q: &TextQuery,
    candidates: &HashSet<String>,
    found: &HashMap<String, FoundMemory>,
    cites: &Citations,
    own: &mut HashMap<String, f64>,
) -> Result<()> {
    let phrases = phrases(&q.function);
    if phrases.is_empty() {
        return Ok(());
    }
    let mut ids: HashMap<i64, &String> = HashMap::default();
    for id in candidates {
        if let Some(rowid) = found.get(id).map(|f| f.rowid).or_else(|| cites.memories.get(id).map(|m| m.rowid)) {
            ids.insert(rowid, id);
        }
    }
    let rowids: HashSet<i64> = ids.keys().copied().collect();
    for (rowid, bm25) in src.memory_scores(sql, &phrases, MEMORY_WEIGHTS, &rowids)? {
        if let Some(id) = ids.get(&rowid) {
            // bm25() is negative, lower is better.
            *own.entry((*id).clone()).or_insert(0.0) += -bm25 * MEMORY_FUNCTION_WEIGHT;
        }
    }
    Ok(())
}

/// A citation as [`citations`] reads it: the message's place in the list
/// asked for, memory id, memory rowid, its source message ids (JSON), its
/// first characters.
type CitationRow = (usize, String, i64, Option<String>, Option<String>);

/// Reads the live memories citing the best [`CHANNEL_DEPTH`] turns on their
/// own (the messages channel) and the best [`FTS_POOL`] turns in context
/// (the full-text channel), in one statement, by the turns' rowids (the
/// messages' id index is not read). (`CROSS JOIN` keeps SQLite from
/// scanning every live memory by the status index: the few sources lead.)
pub fn citations(sql: &dyn Sql, turns: &TurnScores, scope: &RecallScope) -> Result<Citations> {
    // The messages channel's turns come first in the list, so `j.key`
    // (the place in it) tells whose content is needed for the overlap.
    let mut ids: Vec<&str> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::default();
    for (id, _) in turns.plain.iter().take(scope.channel_depth()) {
        if seen.insert(id) {
            ids.push(id);
        }
    }
    let plain = ids.len();
    for (id, _) in turns.context.iter().take(scope.fts_pool()) {
        if seen.insert(id) {
            ids.push(id);
        }
    }
    let mut out = Citations::default();
    if ids.is_empty() {
        return Ok(out);
    }
    let rowids = ids
        .iter()
        .map(|id| turns.rowids.get(*id).copied().ok_or_else(|| crate::core::error::Error::storage(format!("scored turn {id} has no rowid"))))
        .collect::<Result<Vec<i64>>>()?;
    let (cond, extra) = scope.visible(3);
    let mut params = vec![json_param(&rowids)?, SqlValue::Integer(plain as i64)];
    params.extend(extra);
    let rows: Vec<CitationRow> = json_rows_paged(
        sql,
        &format!(
            "SELECT json_array(j.key, m.id, m.rowid, m.source_message_ids, \
                    CASE WHEN j.key < ?2 THEN substr(m.content, 1, {TEXT_READ_CHARS}) END) AS r \
             FROM json_each(?1) j CROSS JOIN citations s ON s.message_rowid = j.value \
             CROSS JOIN memories m ON m.id = s.memory_id WHERE {cond}"
        ),
        &params,
    )?;
    for (place, id, rowid, sources, content) in rows {
        let mid = ids.get(place).ok_or_else(|| crate::core::error::Error::storage("a citation of a turn not asked for"))?;
        let m = match out.memories.entry(id.clone()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(CitingMemory { rowid, sources: id_list(sources.as_deref())?, content: None }),
        };
        if m.content.is_none() {
            m.content = content;
        }
        out.by_message.entry(mid.to_string()).or_default().push(id);
    }
    for ids in out.by_message.values_mut() {
        ids.sort();
    }
    Ok(out)
}

/// Channel 1 on its own (a stage alone): scores the messages itself.
pub fn fts(sql: &dyn Sql, src: Source<'_>, q: &TextQuery, scope: &RecallScope) -> Result<Ranking> {
    let turns = score_turns(sql, src, q, scope)?;
    let cites = citations(sql, &turns, scope)?;
    fts_with(sql, src, q, &turns, &cites, scope)
}

/// Channel 3 on its own (see [`fts`]), ranked by [`score::messages_with`].
pub fn messages(sql: &dyn Sql, src: Source<'_>, q: &TextQuery, scope: &RecallScope) -> Result<(Ranking, Vec<String>)> {
    let turns = score_turns(sql, src, q, scope)?;
    let cites = citations(sql, &turns, scope)?;
    Ok(score::messages_with(q, &turns, &cites, Depth::of(scope)))
}

/// 2. Exact topic-key lookup, in the order the analyzer ranked the keys,
///    through the key index; live memories only unless asked. Each of a
///    key's visible holders carries an equal share of the channel's weight,
///    so every holder is counted, but, as every channel, it ranks at most
///    [`RecallScope::channel_depth`] of them (newest first within a key:
///    [`score::rank_key_holders`]) and reads only those ones' sources: an
///    agent's key said in two thousand sessions is counted, not ranked.
pub fn key(sql: &dyn Sql, keys: &[String], scope: &RecallScope) -> Result<Ranking> {
    let keys: Vec<&String> = keys.iter().take(MAX_KEYS_SEARCHED).collect();
    if keys.is_empty() {
        return Ok(Ranking::new(Channel::Key, vec![]));
    }
    let mut wanted = keys.clone();
    wanted.sort_unstable();
    wanted.dedup();
    let (cond, extra) = scope.visible_status(2);
    let mut params = vec![json_param(&wanted)?];
    params.extend(extra);
    // Each key's visible holders, newest first, with their sources unread.
    let mut by_key: HashMap<String, Vec<(String, Option<String>)>> = HashMap::default();
    for r in sql.query(
        &format!(
            "SELECT m.key, m.id, m.source_message_ids FROM json_each(?1) j CROSS JOIN memories m ON m.key = j.value \
             WHERE {cond} ORDER BY m.id DESC"
        ),
        &params,
    )? {
        let (key, id, sources) = match r.as_slice() {
            [SqlValue::Text(k), SqlValue::Text(id), SqlValue::Text(sources)] => (k, id, Some(sources.clone())),
            [SqlValue::Text(k), SqlValue::Text(id), SqlValue::Null] => (k, id, None),
            _ => return Err(Error::storage("failed to read a key holder's key, id and sources")),
        };
        by_key.entry(key.clone()).or_default().push((id.clone(), sources));
    }
    if scope.filter.is_some() {
        // The filter is tested apart, over the holders: in the statement
        // above, an indexed filter field would draw the planner to the
        // wrong index.
        let holders: Vec<String> = by_key.values().flatten().map(|(id, _)| id.clone()).collect();
        let passing = scope.passing_ids(sql, &holders)?;
        by_key.values_mut().for_each(|h| h.retain(|(id, _)| passing.contains(id)));
    }
    let holders: HashMap<String, Vec<String>> = by_key.iter().map(|(k, h)| (k.clone(), h.iter().map(|(id, _)| id.clone()).collect())).collect();
    let ranking = score::rank_key_holders(&keys, &holders, Depth::of(scope));
    let stored: HashMap<&str, Option<&str>> = by_key.values().flatten().map(|(id, s)| (id.as_str(), s.as_deref())).collect();
    let mut sources: HashMap<String, Vec<String>> = HashMap::default();
    for id in &ranking.ids {
        sources.insert(id.clone(), id_list(stored.get(id.as_str()).copied().flatten())?);
    }
    Ok(ranking.by_evidence(|id| sources.get(id).cloned()))
}

/// Scores messages by full text ([`score::turn_scores`]): the hits and
/// the turns around them come from `src` (the directory or SQLite: the
/// same places).
pub fn score_turns(sql: &dyn Sql, src: Source<'_>, q: &TextQuery, scope: &RecallScope) -> Result<TurnScores> {
    let hits = turn_hits(sql, src, q, scope)?;
    let rowids: Vec<i64> = hits.keys().copied().collect();
    // A turn's mention of a time counts for a question about one only.
    let places = src.places(sql, &rowids, NEIGHBOUR_WINDOW, q.temporal)?;
    score::turn_scores(q, hits, &places, Depth::of(scope))
}

/// The messages' full-text scores ([`Words`]): bm25 of the best
/// [`RecallScope::message_pool`] messages for the query's words, for its
/// expansions and for its stop words, summed per message (by rowid).
fn turn_hits(sql: &dyn Sql, src: Source<'_>, q: &TextQuery, scope: &RecallScope) -> Result<HashMap<i64, Words>> {
    let mut scores: HashMap<i64, Words> = HashMap::default();
    // (terms, weight, whether they are the stop words)
    for (terms, weight, function) in [(&q.primary, 1.0, false), (&q.expansions, EXPANSION_WEIGHT, false), (&q.function, 1.0, true)] {
        let phrases = query_phrases(q, terms);
        if phrases.is_empty() {
            continue;
        }
        for (rowid, bm25) in src.message_hits(sql, &phrases, MESSAGE_WEIGHTS, scope.message_pool())? {
            // bm25() is negative, lower is better.
            let words = scores.entry(rowid).or_default();
            let part = if function { &mut words.function } else { &mut words.content };
            *part += -bm25 * weight;
        }
    }
    Ok(scores)
}

/// 4. and 5. Vector search (direct or HyDE), filtered to live memories.
pub async fn vector(channel: Channel, sql: &dyn Sql, index: &dyn VectorIndex, embedding: &[f32], scope: &RecallScope) -> Result<Ranking> {
    let hits = index.query(embedding, scope.channel_depth()).await?;
    let ids: Vec<String> = hits.into_iter().map(|(id, _)| id).collect();
    Ok(Ranking::new(channel, keep_live(sql, ids, scope)?))
}

/// Channels 4 and 5 together: one call to the index for both embeddings
/// (the local index answers them in one pass), one filter to live
/// memories. A failure fails every channel asked.
pub async fn vectors(sql: &dyn Sql, index: &dyn VectorIndex, asked: &[(Channel, Vec<f32>)], scope: &RecallScope) -> Result<Vec<Ranking>> {
    let explain = scope.explain;
    let embeddings: Vec<Vec<f32>> = asked.iter().map(|(_, e)| e.clone()).collect();
    let hits = match scope.narrowed() {
        // Narrowed: the index ranks the passing memories only.
        true => {
            let passing = |ids: &[String]| scope.passing_ids(sql, ids);
            let only = crate::core::ports::IndexFilter { passing: &passing, ahead: scope.ahead().map(|p| &p.ids), filter: scope.filter.as_ref() };
            index.query_many_in(&embeddings, scope.channel_depth(), &only).await?
        }
        false => index.query_many(&embeddings, scope.channel_depth()).await?,
    };
    let all: Vec<String> = hits.iter().flatten().map(|(id, _)| id.clone()).collect::<HashSet<_>>().into_iter().collect();
    let live = live_sources(sql, &all, scope)?;
    Ok(asked
        .iter()
        .zip(hits)
        .map(|((channel, _), hits)| {
            let mut ranking = Ranking::new(*channel, Vec::new());
            for (id, cosine) in hits.into_iter().filter(|(id, _)| live.contains_key(id)) {
                // Best first: the first live hit's is the best.
                ranking.best_similarity.get_or_insert(cosine);
                if explain {
                    let what = if *channel == Channel::Hyde { "the analyzer's hypothetical answer (HyDE)" } else { "the query" };
                    ranking.why.insert(id.clone(), Explanation::new(f64::from(cosine), format!("cosine similarity to the embedding of {what}")));
                }
                ranking.ids.push(id);
            }
            ranking.by_evidence(|id| live.get(id).cloned())
        })
        .collect())
}

/// The live memories among `ids`, each with its source message ids (an
/// index may lag behind a forget until its job drains; recall must not).
pub fn live_sources(sql: &dyn Sql, ids: &[String], scope: &RecallScope) -> Result<HashMap<String, Vec<String>>> {
    if ids.is_empty() {
        return Ok(HashMap::default());
    }
    let (cond, extra) = scope.visible(2);
    let mut params = vec![json_param(ids)?];
    params.extend(extra);
    let rows: Vec<(String, Option<String>)> = json_rows(
        sql,
        &format!(
            "SELECT json_group_array(json_array(m.id, m.source_message_ids)) FROM json_each(?1) j \
             CROSS JOIN memories m ON m.id = j.value WHERE {cond}"
        ),
        &params,
    )?;
    rows.into_iter().map(|(id, sources)| Ok((id, id_list(sources.as_deref())?))).collect()
}

/// Keeps the ids of live memories, in order (an index may lag behind a
/// forget until its job drains; recall must not).
pub fn keep_live(sql: &dyn Sql, ids: Vec<String>, scope: &RecallScope) -> Result<Vec<String>> {
    let live = live_sources(sql, &ids, scope)?;
    Ok(ids.into_iter().filter(|id| live.contains_key(id)).collect())
}
