//! Lenient reading of model replies: strips Markdown code fences, finds
//! the first complete JSON object or array inside surrounding prose, and
//! reads fields under a few common spellings, ignoring extra fields.
//!
//! It does not repair broken JSON (trailing commas, single quotes, cut-off
//! output): a reply without one well-formed JSON value is unparseable, and
//! the caller retries or gives up.

use serde_json::Value;

/// Most opening brackets tried before giving up on a reply.
const MAX_STARTS: usize = 256;

/// The inside of the first fenced block (```json ... ```), or the text as
/// it is when there is none. An unclosed fence yields everything after it.
pub fn strip_fences(s: &str) -> &str {
    let Some((_, after)) = s.split_once("```") else { return s };
    // Skip the info string ("json") up to the end of the line.
    let body = match after.split_once('\n') {
        Some((info, rest)) if info.trim().chars().all(|c| c.is_ascii_alphanumeric()) => rest,
        _ => after,
    };
    match body.split_once("```") {
        Some((inside, _)) => inside,
        None => body,
    }
}

/// The end (inclusive byte index) of the JSON value opening at `start`,
/// by bracket matching that respects strings and escapes.
fn matching_end(s: &str, start: usize) -> Option<usize> {
    let mut stack: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (i, b) in s.bytes().enumerate().skip(start) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => stack.push(b'}'),
            b'[' => stack.push(b']'),
            b'}' | b']' => {
                if stack.pop() != Some(b) {
                    return None;
                }
                if stack.is_empty() {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn scan(s: &str) -> Option<Value> {
    s.char_indices()
        .filter(|(_, c)| *c == '{' || *c == '[')
        .take(MAX_STARTS)
        .find_map(|(start, _)| serde_json::from_str(s.get(start..=matching_end(s, start)?)?).ok())
}

/// A reply without its reasoning: the blocks that open it
/// (`<think>…</think>`, one after another), and, when a chat template
/// opened the first block in the prompt so the reply holds only its end,
/// the text up to a `</think>` that stands at the end of a line before
/// the answer. `None` when a block that opens the reply is never closed
/// (it ran out mid-thought and holds no answer). A `</think>` quoted in
/// running text ("everything before </think>, so …") is no block's end.
pub fn without_reasoning(reply: &str) -> Option<&str> {
    let mut rest = reply;
    if !rest.trim_start().starts_with("<think>") {
        if let Some((_, after)) = rest.split_once("</think>") {
            let line_end = after.trim_start_matches([' ', '\t']);
            if line_end.is_empty() || line_end.starts_with(['\n', '\r']) {
                rest = after;
            }
        }
    }
    while rest.trim_start().starts_with("<think>") {
        rest = rest.split_once("</think>")?.1;
    }
    Some(rest)
}

/// The texts a reply may be read from, in order: without its reasoning
/// ([`without_reasoning`]), then whole when what was left out holds no
/// JSON and no `<think>` (a statement that quotes `</think>` at a line's
/// end is cut by the first). A reasoning block, or a template-opened one
/// holding a draft, is never read: a draft inside the reasoning is no
/// answer.
pub fn readings(reply: &str) -> Vec<&str> {
    let mut out: Vec<&str> = without_reasoning(reply).into_iter().collect();
    let left_out = out.first().and_then(|kept| reply.get(..reply.len().saturating_sub(kept.len())));
    if out.first() != Some(&reply) && !reply.contains("<think>") && left_out.is_none_or(|b| first_json_in(b).is_none()) {
        out.push(reply);
    }
    out
}

/// The first well-formed JSON object or array in a reply, its reasoning
/// left out ([`without_reasoning`]): inside the first code fence if there
/// is one, else anywhere in the text.
pub fn first_json(reply: &str) -> Option<Value> {
    readings(reply).into_iter().find_map(first_json_in)
}

/// The first well-formed JSON object or array in `text` as it is (no
/// reasoning left out): inside the first code fence if there is one, else
/// anywhere in the text.
pub fn first_json_in(text: &str) -> Option<Value> {
    let reply = text;
    let fenced = strip_fences(reply);
    scan(fenced).or_else(|| if fenced.len() != reply.len() { scan(reply) } else { None })
}

/// The first present, non-null field among `names`.
pub fn field<'a>(v: &'a Value, names: &[&str]) -> Option<&'a Value> {
    names.iter().find_map(|n| v.get(*n).filter(|x| !x.is_null()))
}

/// The list a reply carries: the value itself when it is an array, else
/// the first of `names` that is an array, else its only array field.
pub fn list<'a>(v: &'a Value, names: &[&str]) -> Option<&'a Vec<Value>> {
    if let Some(a) = v.as_array() {
        return Some(a);
    }
    if let Some(a) = field(v, names).and_then(Value::as_array) {
        return Some(a);
    }
    let mut arrays = v.as_object()?.values().filter_map(Value::as_array);
    match (arrays.next(), arrays.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

/// The list a reply names: the value itself when it is an array, else the
/// first of `names` that is an array. Unlike [`list`], no other field is
/// taken for it: in a reply cut off mid-list, the first complete value is
/// an item, whose only array (its cited lines) is no list of items.
pub fn named_list<'a>(v: &'a Value, names: &[&str]) -> Option<&'a Vec<Value>> {
    v.as_array().or_else(|| field(v, names).and_then(Value::as_array))
}

/// A text field (numbers and booleans are written out); `None` for
/// missing, empty, or the string "null".
pub fn text(v: &Value, names: &[&str]) -> Option<String> {
    let s = match field(v, names)? {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    (!s.is_empty() && !s.eq_ignore_ascii_case("null") && !s.eq_ignore_ascii_case("none")).then_some(s)
}

/// A list of texts; a single text counts as a list of one.
pub fn texts(v: &Value, names: &[&str]) -> Vec<String> {
    match field(v, names) {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| match x {
                Value::String(s) => Some(s.trim().to_string()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .filter(|s| !s.is_empty())
            .collect(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_string()],
        _ => Vec::new(),
    }
}

/// Non-negative integers from a number, a numeric string ("[3]", "3, 4"),
/// or an array of those. One beyond `usize` (2^32 on Wasm) or `u64` is
/// `usize::MAX`, a slot no reply has, on every platform alike.
pub fn indices(v: &Value) -> Vec<usize> {
    match v {
        Value::Number(n) => n.as_u64().map(|n| vec![crate::core::api::count(n)]).unwrap_or_default(),
        Value::String(s) => {
            s.split(|c: char| !c.is_ascii_digit()).filter(|p| !p.is_empty()).map(|p| p.parse::<u64>().map_or(usize::MAX, crate::core::api::count)).collect()
        }
        Value::Array(a) => a.iter().flat_map(indices).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn test_fenced_json_is_read() {
        let r = "Here you go:\n```json\n{\"memories\": []}\n```\nAnything else?";
        assert_eq!(first_json(r), Some(json!({"memories": []})));
    }

    #[test]
    fn test_json_inside_prose_is_found_past_false_starts() {
        let r = "Sure [as asked] the answer is {\"a\": \"has } and ] inside\", \"b\": [1, 2]} -- done";
        assert_eq!(first_json(r), Some(json!({"a": "has } and ] inside", "b": [1, 2]})));
    }

    #[test]
    fn test_garbage_and_broken_json_yield_nothing() {
        assert_eq!(first_json("I could not do that."), None);
        assert_eq!(first_json("{\"a\": 1,}"), None);
        assert_eq!(first_json("{\"a\": [1, 2"), None);
        assert_eq!(first_json("```json\n{\"a\": 1"), None);
    }

    #[test]
    fn test_unclosed_fence_still_yields_its_json() {
        assert_eq!(first_json("```json\n{\"a\": 1}"), Some(json!({"a": 1})));
    }

    #[test]
    fn test_lists_and_fields_are_read_leniently() {
        let v = json!({"note": "x", "results": [{"i": "2"}]});
        assert_eq!(list(&v, &["items"]).map(Vec::len), Some(1));
        assert_eq!(list(&json!([1]), &["items"]).map(Vec::len), Some(1));
        assert_eq!(text(&json!({"key": "null"}), &["key"]), None);
        assert_eq!(texts(&json!({"q": "one"}), &["q"]), vec!["one"]);
        assert_eq!(indices(&json!(["[3]", 4, "5, 6"])), vec![3, 4, 5, 6]);
    }

    #[test]
    fn test_an_index_too_wide_for_any_platform_names_no_slot() {
        let huge = indices(&json!([18446744073709551615u64, "99999999999999999999999", 3]));
        assert_eq!(huge, vec![usize::try_from(u64::MAX).unwrap_or(usize::MAX), usize::MAX, 3]);
        assert!(huge[..2].iter().all(|&i| i >= u32::MAX as usize), "never wrapped to a small slot");
    }
}
