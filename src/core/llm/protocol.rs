//! Request and response shapes of the two HTTP model protocols, as pure
//! functions over JSON, so the wasm glue only moves bytes:
//!
//! * Workers AI text generation (`env.AI.run(model, input)` or
//!   `POST /ai/run/{model}`): input `{messages, max_tokens,
//!   response_format?}`, output `{response}` (or `{result: {response}}`
//!   over REST); embeddings: input `{text: [...]}`, output
//!   `{shape, data: [[f32]]}`.
//! * OpenAI-compatible chat completions and embeddings (`/v1/chat/
//!   completions`, `/v1/embeddings`), as local model servers speak them.
//!
//! Headers (authorization, session affinity) and transport are the glue's.

use crate::core::error::{Error, Result};
use crate::core::ports::{ChatRequest, ModelRole};
use serde_json::{json, Map, Value};

fn messages(req: &ChatRequest) -> Value {
    json!([
        { "role": "system", "content": req.system },
        { "role": "user", "content": req.user },
    ])
}

/// Instruct calls run cold (temperature 0) for repeatable extraction;
/// synthesis keeps the model's default.
fn add_common(body: &mut Map<String, Value>, req: &ChatRequest) {
    body.insert("messages".into(), messages(req));
    body.insert("max_tokens".into(), json!(req.max_tokens));
    if req.role == ModelRole::Instruct {
        body.insert("temperature".into(), json!(0));
    }
    if req.json {
        body.insert("response_format".into(), json!({ "type": "json_object" }));
    }
}

/// The Workers AI text-generation input. The model is not part of the
/// body (it is the first argument of `AI.run` or a path segment of the
/// REST route); it is taken for symmetry with [`openai_chat_request`].
pub fn workers_ai_request(req: &ChatRequest, _model: &str) -> Value {
    let mut body = Map::new();
    add_common(&mut body, req);
    Value::Object(body)
}

/// The text of a Workers AI reply. `response` may be a string, or already
/// an object in JSON mode (it is then written back out as JSON text).
/// Replies in the OpenAI shape, which some Workers AI models give, are
/// read too.
pub fn parse_workers_ai_response(v: &Value) -> Result<String> {
    let inner = v.get("result").filter(|r| r.is_object()).unwrap_or(v);
    match inner.get("response") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Null) | None => {
            if inner.get("choices").is_some() {
                return parse_openai_chat_response(inner);
            }
            Err(Error::provider(format!("workers ai reply has no response: {}", brief(v))))
        }
        Some(other) => Ok(other.to_string()),
    }
}

/// The OpenAI-compatible chat-completions body.
pub fn openai_chat_request(req: &ChatRequest, model: &str) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    add_common(&mut body, req);
    Value::Object(body)
}

/// `choices[0].message.content` of an OpenAI-compatible reply.
pub fn parse_openai_chat_response(v: &Value) -> Result<String> {
    if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
        let msg = e.get("message").and_then(Value::as_str).map_or_else(|| e.to_string(), str::to_string);
        return Err(Error::provider(format!("model endpoint error: {msg}")));
    }
    match v.pointer("/choices/0/message/content") {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(Error::provider(format!("chat reply has no choices[0].message.content: {}", brief(v)))),
    }
}

/// The Workers AI embedding input.
pub fn workers_ai_embed_request(texts: &[String]) -> Value {
    json!({ "text": texts })
}

/// Vectors of a Workers AI embedding reply (`{shape, data}`, possibly
/// under `result`), checked against `shape` when present.
pub fn parse_workers_ai_embed_response(v: &Value) -> Result<Vec<Vec<f32>>> {
    let inner = v.get("result").filter(|r| r.is_object()).unwrap_or(v);
    let data = inner.get("data").and_then(Value::as_array).ok_or_else(|| Error::provider(format!("embedding reply has no data: {}", brief(v))))?;
    let vectors = one_dimension(data.iter().map(vector).collect::<Result<Vec<_>>>()?)?;
    if let Some(shape) = inner.get("shape").and_then(Value::as_array) {
        let want: Vec<u64> = shape.iter().filter_map(Value::as_u64).collect();
        let dims = vectors.first().map_or(0, Vec::len) as u64;
        if matches!(want[..], [rows, cols] if rows != vectors.len() as u64 || cols != dims) {
            return Err(Error::provider(format!("embedding reply shape {want:?} does not match its data")));
        }
    }
    Ok(vectors)
}

/// `vectors`, when they are all of one dimension: a reply whose rows
/// differ in length is no batch of one model's vectors.
pub fn one_dimension(vectors: Vec<Vec<f32>>) -> Result<Vec<Vec<f32>>> {
    match vectors.iter().map(Vec::len).find(|n| Some(*n) != vectors.first().map(Vec::len)) {
        Some(other) => Err(Error::provider(format!("embedding reply mixes vectors of {} and {other} dimensions", vectors.first().map_or(0, Vec::len)))),
        None => Ok(vectors),
    }
}

/// The OpenAI-compatible embeddings body.
pub fn openai_embed_request(texts: &[String], model: &str) -> Value {
    json!({ "model": model, "input": texts })
}

/// `data[i].embedding` of an OpenAI-compatible reply, ordered by `index`.
/// Every item gives its `index` or none does (then the items are in
/// order); the indices must be `0..n`, each once: a reply that repeats or
/// skips one would store vectors against the wrong texts.
pub fn parse_openai_embed_response(v: &Value) -> Result<Vec<Vec<f32>>> {
    let data = v.get("data").and_then(Value::as_array).ok_or_else(|| Error::provider(format!("embedding reply has no data: {}", brief(v))))?;
    let mut items = data
        .iter()
        .enumerate()
        .map(|(pos, d)| {
            let index = match d.get("index") {
                None => None,
                Some(i) => Some(
                    i.as_u64()
                        .map(crate::core::api::count)
                        .ok_or_else(|| Error::provider(format!("embedding item {pos} has an index that is no count: {i}")))?,
                ),
            };
            let e = d.get("embedding").ok_or_else(|| Error::provider("embedding item has no embedding"))?;
            Ok((index, pos, vector(e)?))
        })
        .collect::<Result<Vec<_>>>()?;
    if items.iter().any(|(i, ..)| i.is_some()) {
        items.sort_by_key(|(i, ..)| *i);
        if !items.iter().enumerate().all(|(k, (i, ..))| *i == Some(k)) {
            let got: Vec<String> = items.iter().map(|(i, ..)| i.map_or_else(|| "none".to_string(), |i| i.to_string())).collect();
            return Err(Error::provider(format!("embedding reply's indices are not 0..{} each once: {}", items.len(), got.join(", "))));
        }
    }
    one_dimension(items.into_iter().map(|(.., v)| v).collect())
}

fn vector(v: &Value) -> Result<Vec<f32>> {
    v.as_array()
        .ok_or_else(|| Error::provider("an embedding is not an array"))?
        .iter()
        .map(|x| x.as_f64().map(|f| f as f32).ok_or_else(|| Error::provider("an embedding holds a non-number")))
        .collect()
}

/// The start of a reply, for error messages.
fn brief(v: &Value) -> String {
    v.to_string().chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(json_mode: bool) -> ChatRequest {
        ChatRequest { role: ModelRole::Instruct, system: "sys".into(), user: "usr".into(), json: json_mode, max_tokens: 64 }
    }

    #[test]
    fn test_workers_ai_request_shape() {
        let v = workers_ai_request(&req(true), "@cf/meta/llama-4-scout-17b-16e-instruct");
        assert_eq!(v["messages"], json!([{"role": "system", "content": "sys"}, {"role": "user", "content": "usr"}]));
        assert_eq!(v["max_tokens"], json!(64));
        assert_eq!(v["response_format"], json!({"type": "json_object"}));
        assert!(v.get("model").is_none());
        let plain = workers_ai_request(&ChatRequest { role: ModelRole::Synthesis, ..req(false) }, "m");
        assert!(plain.get("response_format").is_none());
        assert!(plain.get("temperature").is_none());
    }

    #[test]
    fn test_workers_ai_response_forms() {
        assert_eq!(parse_workers_ai_response(&json!({"response": "hi"})).unwrap(), "hi");
        assert_eq!(parse_workers_ai_response(&json!({"result": {"response": "hi"}, "success": true})).unwrap(), "hi");
        let obj = parse_workers_ai_response(&json!({"response": {"memories": []}})).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&obj).unwrap(), json!({"memories": []}));
        let oa = json!({"choices": [{"message": {"content": "x"}}]});
        assert_eq!(parse_workers_ai_response(&oa).unwrap(), "x");
        assert!(parse_workers_ai_response(&json!({"result": null})).unwrap_err().is_provider());
    }

    #[test]
    fn test_openai_chat_requests_ask_for_json_and_replies_yield_their_text_or_the_error() {
        let v = openai_chat_request(&req(true), "qwen2.5");
        assert_eq!(v["model"], json!("qwen2.5"));
        assert_eq!(v["messages"][1]["content"], json!("usr"));
        assert_eq!(v["response_format"]["type"], json!("json_object"));
        let reply = json!({"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]});
        assert_eq!(parse_openai_chat_response(&reply).unwrap(), "ok");
        let err = parse_openai_chat_response(&json!({"error": {"message": "overloaded"}})).unwrap_err();
        assert!(err.is_provider() && err.message().contains("overloaded"));
        assert!(parse_openai_chat_response(&json!({"choices": []})).is_err());
    }

    #[test]
    fn test_embedding_replies_of_both_providers_read_in_input_order_and_bad_shapes_are_refused() {
        let texts = vec!["a".to_string(), "b".to_string()];
        assert_eq!(workers_ai_embed_request(&texts), json!({"text": ["a", "b"]}));
        let wa = json!({"shape": [2, 2], "data": [[0.5, 1.0], [0.0, -1.0]]});
        assert_eq!(parse_workers_ai_embed_response(&wa).unwrap(), vec![vec![0.5, 1.0], vec![0.0, -1.0]]);
        let wrapped = json!({"result": {"shape": [1, 2], "data": [[1.0, 2.0]]}});
        assert_eq!(parse_workers_ai_embed_response(&wrapped).unwrap(), vec![vec![1.0, 2.0]]);
        assert!(parse_workers_ai_embed_response(&json!({"shape": [3, 2], "data": [[1.0, 2.0]]})).is_err());
        assert_eq!(openai_embed_request(&texts, "e5"), json!({"model": "e5", "input": ["a", "b"]}));
        let oa = json!({"data": [{"index": 1, "embedding": [2.0]}, {"index": 0, "embedding": [1.0]}]});
        assert_eq!(parse_openai_embed_response(&oa).unwrap(), vec![vec![1.0], vec![2.0]]);
        assert!(parse_openai_embed_response(&json!({"data": [{"embedding": ["x"]}]})).is_err());
    }

    #[test]
    fn test_an_embedding_reply_whose_indices_repeat_or_skip_is_refused_not_stored_against_other_texts() {
        let reply =
            |indices: &[Value]| json!({ "data": indices.iter().enumerate().map(|(k, i)| json!({"index": i, "embedding": [k as f64]})).collect::<Vec<_>>() });
        for bad in [vec![json!(0), json!(0)], vec![json!(0), json!(2)], vec![json!(1), json!(2)], vec![json!(0), json!("1")], vec![json!(0), Value::Null]] {
            let e = parse_openai_embed_response(&reply(&bad)).unwrap_err();
            assert!(e.is_provider(), "{bad:?}: {e}");
        }
        // One without an index among others that have one is not in order either.
        assert!(parse_openai_embed_response(&json!({"data": [{"index": 0, "embedding": [0.0]}, {"embedding": [1.0]}]})).is_err());
        // None given: in order.
        assert_eq!(parse_openai_embed_response(&json!({"data": [{"embedding": [0.0]}, {"embedding": [1.0]}]})).unwrap(), vec![vec![0.0], vec![1.0]]);
    }
}
