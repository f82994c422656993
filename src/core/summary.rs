//! `getSummary`: a Markdown summary of a profile, built from its active
//! memories (rule-based; no model call), in the sections and the order
//! Cloudflare's Agent Memory documents: key facts, recent events (the
//! newest first), active tasks (those of the active session, the most
//! recent one, and those remembered in none: a task is set aside once its
//! session ends), the last session, and instructions. A `sessionId`
//! chooses which session the last-session section shows (the most recent
//! one without it); the other sections do not change with it. Sections
//! with nothing in them are left out; a profile with none says so in one
//! line that names it a profile (wrangler's end-to-end check of the
//! service expects the word of an empty profile's summary). Each section reads at most [`MAX_PER_SECTION`] memories (the
//! newest stored) and says so when there were more: a summary is not a
//! listing.
//!
//! Not done: the documented shares of a token budget per section (the
//! sections are bounded by count), and a model-written prose summary.

use crate::core::error::Result;
use crate::core::model::{Memory, MemoryType, Status};
use crate::core::remember::NO_SESSION;
use crate::core::store::{ListFilter, Store};
use crate::core::time::iso;

/// Most memories a summary lists per section.
pub const MAX_PER_SECTION: usize = 50;
/// How far back "recent" events reach, in days.
pub const RECENT_EVENT_DAYS: i64 = 30;
const DAY_MILLIS: i64 = 86_400_000;

/// The summary of a profile with nothing to show.
pub const EMPTY: &str = "No memories in this profile yet.\n";

/// The memories of one section, and whether more were left out.
type Section = (Vec<Memory>, bool);

pub fn render(store: &Store<'_>, session_id: Option<&str>, now: i64) -> Result<String> {
    let active = |kind: MemoryType, session: Option<&str>| -> Result<Section> {
        let page = store.list(&ListFilter {
            limit: MAX_PER_SECTION,
            session_id: session.map(str::to_string),
            kind: Some(kind),
            status: Some(Status::Active),
            ..ListFilter::default()
        })?;
        Ok((page.memories, page.cursor.is_some()))
    };
    let newest = store.newest_session()?;
    let mut out = String::new();
    let (facts, more) = active(MemoryType::Fact, None)?;
    section(&mut out, "Key Facts", None, &facts, more);
    let (events, more) = active(MemoryType::Event, None)?;
    section(&mut out, "Recent Events", None, &recent_events(events, now), more);
    let mut tasks = active(MemoryType::Task, Some(NO_SESSION))?;
    if let Some(session) = &newest {
        let (of_session, more) = active(MemoryType::Task, Some(session))?;
        tasks.0.extend(of_session);
        tasks.1 |= more;
    }
    section(&mut out, "Active Tasks", None, &tasks.0, tasks.1);
    if let Some(session) = session_id.map(str::to_string).or(newest) {
        let (mut memories, mut more) = (Vec::new(), false);
        for kind in MemoryType::ALL {
            let (of_kind, left) = active(kind, Some(&session))?;
            more |= left;
            memories.extend(of_kind);
        }
        section(&mut out, "Last Session", Some(&session), &memories, more);
    }
    let (instructions, more) = active(MemoryType::Instruction, None)?;
    section(&mut out, "Instructions", None, &instructions, more);
    if out.is_empty() {
        out.push_str(EMPTY);
    }
    Ok(out)
}

/// Writes one section of `memories` (nothing when there are none), under
/// a line naming its `session` when it has one, saying so when `more`
/// were left out.
fn section(out: &mut String, title: &str, session: Option<&str>, memories: &[Memory], more: bool) {
    if memories.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!("## {title}\n"));
    if let Some(session) = session {
        out.push_str(&format!("Session: {session}\n"));
    }
    for m in memories {
        match (&m.event_date, m.kind) {
            (Some(d), MemoryType::Event) => out.push_str(&format!("- {} ({d})\n", m.summary)),
            _ => out.push_str(&format!("- {}\n", m.summary)),
        }
    }
    if more {
        out.push_str(&format!("- …and more: a section reads the newest {MAX_PER_SECTION} stored of a kind (`list` shows them all)\n"));
    }
}

/// Events of the last [`RECENT_EVENT_DAYS`] (by when they happened, else
/// when they were stored), the newest first.
fn recent_events(mut events: Vec<Memory>, now: i64) -> Vec<Memory> {
    let since = iso(now.saturating_sub(RECENT_EVENT_DAYS.saturating_mul(DAY_MILLIS)));
    let since = since.get(..10).unwrap_or_default().to_string();
    let when = |m: &Memory| m.event_date.clone().unwrap_or_else(|| m.created_at.get(..10).unwrap_or_default().to_string());
    events.retain(|m| when(m) >= since);
    events.sort_by_key(|m| std::cmp::Reverse(when(m)));
    events
}
