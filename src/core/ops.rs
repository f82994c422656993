//! Profile operations: the one core behind every way in.
//!
//! REST handlers, the RPC entrypoint, the MCP endpoint and the console all
//! end in [`Profile::dispatch`] (or the typed methods it calls), running
//! inside the profile's Durable Object, or natively in tests.

use crate::core::api::{
    self, IngestRequest, ListRequest, RecallRequest, RememberRequest, SummaryRequest, DEFAULT_PAGE_SIZE,
};
use crate::core::error::{Error, Result};
use crate::core::model::{IngestReport, ListPage, Memory, MemoryDetail, Stats};
use crate::core::ports::{Embedder, Sql, VectorIndex};
use crate::core::provider::Reasoner;
use crate::core::store::{ListFilter, Store};
use crate::core::{background, ingest, portable, recall, remember, schema, summary};
use serde_json::{json, Value};

/// Everything an operation needs, borrowed for one call.
pub struct Profile<'a> {
    /// `{namespace}/{profile}`.
    pub name: &'a str,
    pub sql: &'a dyn Sql,
    pub reasoner: &'a dyn Reasoner,
    pub embedder: &'a dyn Embedder,
    pub index: &'a dyn VectorIndex,
    /// Milliseconds since the epoch, read once per call.
    pub now: i64,
    pub limits: Limits,
}

/// Per-profile write limits (SPEC.md section 7).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Most memories a profile holds (all statuses). Writes that would go
    /// over it are refused with 409; nothing is evicted silently.
    pub max_memories: i64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_memories: 1_000_000 }
    }
}

impl<'a> Profile<'a> {
    pub fn store(&self) -> Store<'a> {
        Store::new(self.sql, self.now)
    }

    /// Creates or upgrades the schema.
    pub fn migrate(&self) -> Result<()> {
        schema::migrate(self.sql)
    }

    /// Runs operation `op` with JSON arguments and returns its JSON result.
    /// The single dispatch table of the service.
    pub async fn dispatch(&self, op: &str, args: Value) -> Result<Value> {
        let args = if args.is_null() { json!({}) } else { args };
        Ok(match op {
            "ingest" => json!(self.ingest(api::parse(args)?).await?),
            "remember" => json!(self.remember(api::parse(args)?).await?),
            "recall" => json!(self.recall(api::parse(args)?).await?),
            "list" => json!(self.list(api::parse(args)?)?),
            "get" => json!(self.get(&id_arg(&args)?)?),
            "forget" => json!(self.forget(&id_arg(&args)?)?),
            "delete" => json!(self.delete(&id_arg(&args)?)?),
            "deleteSession" => json!(self.delete_session(&session_arg(&args)?)?),
            "getSummary" => json!(self.summary(api::parse(args)?)?),
            "export" => Value::String(self.export()?),
            "import" => json!(self.import(args.get("data").and_then(Value::as_str).unwrap_or(""))?),
            "stats" => json!(self.stats()?),
            "deleteProfile" => json!(self.wipe()?),
            "drain" => json!(self.drain().await?),
            other => return Err(Error::not_found(format!("no operation named {other}"))),
        })
    }

    pub async fn ingest(&self, req: IngestRequest) -> Result<IngestReport> {
        req.validate()?;
        ingest::run(self, req).await
    }

    pub async fn remember(&self, req: RememberRequest) -> Result<Memory> {
        req.validate()?;
        self.check_capacity(1)?;
        remember::run(self, req).await
    }

    pub async fn recall(&self, req: RecallRequest) -> Result<recall::RecallResponse> {
        req.validate()?;
        recall::run(self, req).await
    }

    pub fn list(&self, req: ListRequest) -> Result<ListPage> {
        req.validate()?;
        self.store().list(&ListFilter {
            limit: req.limit.unwrap_or(DEFAULT_PAGE_SIZE),
            cursor: req.cursor,
            session_id: req.session_id,
            kind: req.kind,
            status: req.status,
            key: req.key,
        })
    }

    pub fn get(&self, id: &str) -> Result<MemoryDetail> {
        api::validate_id(id)?;
        let store = self.store();
        let memory = store.get_memory(id)?.ok_or_else(|| Error::not_found(format!("no memory with id {id}")))?;
        let versions = store.version_chain(&memory)?;
        let source_messages = store.messages_by_ids(&memory.source_message_ids)?;
        Ok(MemoryDetail { memory, versions, source_messages })
    }

    pub fn forget(&self, id: &str) -> Result<Memory> {
        api::validate_id(id)?;
        let store = self.store();
        store.transaction(|| store.forget(id))
    }

    /// Hard delete: the memory, and its source messages together with every
    /// other memory that cites them (nothing derived from a deleted message
    /// survives it).
    pub fn delete(&self, id: &str) -> Result<Value> {
        api::validate_id(id)?;
        let store = self.store();
        let memory = store.get_memory(id)?.ok_or_else(|| Error::not_found(format!("no memory with id {id}")))?;
        store.transaction(|| {
            let mut memory_ids = store.memories_citing(&memory.source_message_ids)?;
            memory_ids.push(memory.id.clone());
            memory_ids.sort();
            memory_ids.dedup();
            store.delete_memories(&memory_ids)?;
            store.delete_messages(&memory.source_message_ids)?;
            Ok(json!({ "id": id, "deletedMemories": memory_ids, "deletedMessages": memory.source_message_ids }))
        })
    }

    pub fn delete_session(&self, session_id: &str) -> Result<Value> {
        api::validate_session_id(session_id)?;
        let store = self.store();
        store.transaction(|| {
            let messages: Vec<String> = store.session_messages(session_id)?.into_iter().map(|m| m.id).collect();
            let mut memory_ids = store.session_memory_ids(session_id)?;
            memory_ids.extend(store.memories_citing(&messages)?);
            memory_ids.sort();
            memory_ids.dedup();
            store.delete_memories(&memory_ids)?;
            store.delete_messages(&messages)?;
            Ok(json!({ "sessionId": session_id, "deletedMemories": memory_ids.len(), "deletedMessages": messages.len() }))
        })
    }

    pub fn summary(&self, req: SummaryRequest) -> Result<Value> {
        if let Some(s) = &req.session_id {
            api::validate_session_id(s)?;
        }
        Ok(json!({ "summary": summary::render(&self.store(), req.session_id.as_deref())? }))
    }

    pub fn export(&self) -> Result<String> {
        portable::export(&self.store(), self.name)
    }

    pub fn import(&self, ndjson: &str) -> Result<portable::ImportReport> {
        let parsed = portable::parse(ndjson)?;
        self.check_capacity(parsed.memories.len() as i64)?;
        let store = self.store();
        store.transaction(|| portable::import(&store, &parsed))
    }

    pub fn stats(&self) -> Result<Stats> {
        self.store().stats()
    }

    /// Deletes every row of the profile, then every vector.
    pub fn wipe(&self) -> Result<Value> {
        let store = self.store();
        let ids: Vec<String> = store.all_memories()?.into_iter().map(|m| m.id).collect();
        store.transaction(|| {
            store.wipe()?;
            for id in &ids {
                store.enqueue(crate::core::store::JOB_UNVECTOR, id)?;
            }
            Ok(())
        })?;
        Ok(json!({ "deleted": true, "memories": ids.len() }))
    }

    /// Runs due background jobs once (the alarm calls this).
    pub async fn drain(&self) -> Result<background::DrainReport> {
        background::drain(self).await
    }

    fn check_capacity(&self, adding: i64) -> Result<()> {
        let count = self
            .sql
            .query("SELECT COUNT(*) FROM memories", &[])?
            .first()
            .and_then(|r| r[0].as_i64())
            .unwrap_or(0);
        if count + adding > self.limits.max_memories {
            return Err(Error::conflict(format!(
                "profile is full: it holds {count} memories and its limit is {}",
                self.limits.max_memories
            )));
        }
        Ok(())
    }
}

fn id_arg(args: &Value) -> Result<String> {
    args.get("id").and_then(Value::as_str).map(str::to_string).ok_or_else(|| Error::invalid("id is required"))
}

fn session_arg(args: &Value) -> Result<String> {
    args.get("sessionId")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Error::invalid("sessionId is required"))
}
