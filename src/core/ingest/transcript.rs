//! Rendering messages as a transcript: role labels, dates, line indices,
//! relative dates resolved to absolute ones.

use crate::core::api::MAX_MESSAGE_BYTES;
use crate::core::dates;
use crate::core::model::Message;
use crate::core::provider::{Line, Transcript};
use std::rc::Rc;

/// Every message of a call as a transcript line, its relative dates
/// resolved against its own date (its timestamp, else `session_date`),
/// unless that would take it past a message's limit
/// ([`dates::resolve_within`]).
/// Made once per call: the transcripts of overlapping chunks and windows
/// share the lines' texts rather than each holding a copy (a call may
/// carry 16 MB of text, and a message sits in up to three transcripts).
pub fn lines(messages: &[Message], session_date: Option<&str>) -> Vec<Line> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            // The day where it was said: "yesterday" at 21:00 in UTC-5 is
            // reckoned from that evening's date, not the UTC one.
            let anchor = m.timestamp.as_deref().or(session_date).and_then(crate::core::time::local_date_of);
            Line {
                index: i,
                message_id: m.id.clone(),
                role: m.role.clone(),
                date: anchor.map(|d| d.format("%Y-%m-%d").to_string()),
                text: match anchor {
                    Some(d) => Rc::from(dates::resolve_within(&m.content, d, MAX_MESSAGE_BYTES)),
                    None => Rc::from(m.content.as_str()),
                },
            }
        })
        .collect()
}

/// The transcript of `lines[range]` (see [`lines`]). Line indices are
/// positions in the call's messages, so transcripts of overlapping chunks
/// share them.
pub fn build(session_id: &str, lines: &[Line], range: (usize, usize)) -> Transcript {
    Transcript { session_id: session_id.to_string(), lines: lines.get(range.0..range.1.min(lines.len())).unwrap_or_default().to_vec() }
}
