//! `getSummary`: a Markdown summary of a profile, built from its active
//! memories (rule-based; no model call), in the sections Cloudflare's
//! Agent Memory documents: key facts, instructions, recent events, active
//! tasks, and the last session. A `sessionId` chooses which session the
//! last-session section shows (the most recent one without it); the other
//! sections always cover the whole profile. Sections with nothing in them
//! are left out. Each section reads at most [`MAX_PER_SECTION`] memories
//! (the newest stored) and says so when there were more: a summary is not
//! a listing.

use crate::core::error::Result;
use crate::core::model::{Memory, MemoryType, Status};
use crate::core::store::{ListFilter, Store};
use crate::core::time::iso;

/// Most memories a summary lists per section.
pub const MAX_PER_SECTION: usize = 50;
/// How far back "recent" events reach, in days.
pub const RECENT_EVENT_DAYS: i64 = 30;
const DAY_MILLIS: i64 = 86_400_000;

pub fn render(store: &Store<'_>, session_id: Option<&str>, now: i64) -> Result<String> {
    let mut out = "# Profile summary\n".to_string();
    let active = |kind: MemoryType, session: Option<&str>| {
        store.list(&ListFilter {
            limit: MAX_PER_SECTION,
            session_id: session.map(str::to_string),
            kind: Some(kind),
            status: Some(Status::Active),
            ..ListFilter::default()
        })
    };
    let mut any = false;
    for (kind, title) in [(MemoryType::Fact, "Key Facts"), (MemoryType::Instruction, "Instructions")] {
        let page = active(kind, None)?;
        any |= section(&mut out, title, &page.memories, page.cursor.is_some());
    }
    let events = active(MemoryType::Event, None)?;
    any |= section(&mut out, "Recent Events", &recent_events(events.memories, now), events.cursor.is_some());
    let tasks = active(MemoryType::Task, None)?;
    any |= section(&mut out, "Active Tasks", &tasks.memories, tasks.cursor.is_some());
    if let Some(session) = session_id.map(str::to_string).or(store.newest_session()?) {
        let (mut memories, mut more) = (Vec::new(), false);
        for kind in MemoryType::ALL {
            let page = active(kind, Some(&session))?;
            more |= page.cursor.is_some();
            memories.extend(page.memories);
        }
        any |= section(&mut out, &format!("Last Session ({session})"), &memories, more);
    }
    if !any {
        out.push_str("\nNo memories in this profile yet.\n");
    }
    Ok(out)
}

/// Writes one section of `memories` (nothing when there are none), saying
/// so when `more` were left out; whether it wrote one.
fn section(out: &mut String, title: &str, memories: &[Memory], more: bool) -> bool {
    if memories.is_empty() {
        return false;
    }
    out.push_str(&format!("\n## {title}\n\n"));
    for m in memories {
        match (&m.event_date, m.kind) {
            (Some(d), MemoryType::Event) => out.push_str(&format!("- {d}: {}\n", m.summary)),
            _ => out.push_str(&format!("- {}\n", m.summary)),
        }
    }
    if more {
        out.push_str(&format!("- …and more: the newest {MAX_PER_SECTION} stored of this kind were read (`list` shows them all)\n"));
    }
    true
}

/// Events of the last [`RECENT_EVENT_DAYS`] (by when they happened, else
/// when they were stored), oldest first.
fn recent_events(mut events: Vec<Memory>, now: i64) -> Vec<Memory> {
    let since = iso(now.saturating_sub(RECENT_EVENT_DAYS.saturating_mul(DAY_MILLIS)));
    let since = since.get(..10).unwrap_or_default().to_string();
    let when = |m: &Memory| m.event_date.clone().unwrap_or_else(|| m.created_at.get(..10).unwrap_or_default().to_string());
    events.retain(|m| when(m) >= since);
    events.sort_by_key(when);
    events
}
