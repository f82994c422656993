//! `getSummary`: a Markdown summary of a session or a whole profile, built
//! from its active memories (rule-based; no model call).

use crate::core::error::Result;
use crate::core::model::{MemoryType, Status};
use crate::core::store::{ListFilter, Store};

/// Most memories a summary lists per section.
pub const MAX_PER_SECTION: usize = 50;

pub fn render(store: &Store<'_>, session_id: Option<&str>) -> Result<String> {
    let mut out = match session_id {
        Some(s) => format!("# Summary of session {s}\n"),
        None => "# Profile summary\n".to_string(),
    };
    let mut any = false;
    for (kind, title) in [
        (MemoryType::Fact, "Facts"),
        (MemoryType::Instruction, "Instructions"),
        (MemoryType::Event, "Events"),
        (MemoryType::Task, "Tasks"),
    ] {
        let page = store.list(&ListFilter {
            limit: MAX_PER_SECTION,
            session_id: session_id.map(str::to_string),
            kind: Some(kind),
            status: Some(Status::Active),
            ..ListFilter::default()
        })?;
        if page.memories.is_empty() {
            continue;
        }
        any = true;
        out.push_str(&format!("\n## {title}\n\n"));
        let mut memories = page.memories;
        if kind == MemoryType::Event {
            memories.sort_by(|a, b| a.event_date.cmp(&b.event_date));
        }
        for m in memories {
            match (&m.event_date, kind) {
                (Some(d), MemoryType::Event) => out.push_str(&format!("- {d}: {}\n", m.summary)),
                _ => out.push_str(&format!("- {}\n", m.summary)),
            }
        }
    }
    if !any {
        out.push_str("\nNo memories yet.\n");
    }
    Ok(out)
}
