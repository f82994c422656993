//! Rendering messages as a transcript: role labels, dates, line indices,
//! relative dates resolved to absolute ones.

use crate::core::dates;
use crate::core::model::Message;
use crate::core::provider::{Line, Transcript};

/// Builds the transcript of `messages[range]`. Line indices are positions
/// in `messages`, so transcripts of overlapping chunks share them.
pub fn build(session_id: &str, messages: &[Message], range: (usize, usize), session_date: Option<&str>) -> Transcript {
    let lines = messages
        .iter()
        .enumerate()
        .take(range.1)
        .skip(range.0)
        .map(|(i, m)| {
            let anchor = m.timestamp.as_deref().or(session_date).and_then(crate::core::time::date_of);
            Line {
                index: i,
                message_id: m.id.clone(),
                role: m.role.clone(),
                date: anchor.map(|d| d.format("%Y-%m-%d").to_string()),
                text: match anchor {
                    Some(d) => dates::resolve(&m.content, d),
                    None => m.content.clone(),
                },
            }
        })
        .collect();
    Transcript { session_id: session_id.to_string(), lines }
}
