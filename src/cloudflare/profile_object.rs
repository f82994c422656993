//! The profile Durable Object: one per `{namespace}/{profile}`, owning
//! that profile's SQLite database. Migrations run in `new()`. Every
//! operation arrives as `{name, op, args}` and goes to the core's
//! dispatch table; the alarm drains the outbox.

use crate::cloudflare::config::Config;
use crate::cloudflare::do_sql::DoSql;
use crate::cloudflare::providers::Providers;
use crate::core::error::Error;
use crate::core::ops::{Limits, Profile};
use serde::Deserialize;
use serde_json::{json, Value};
use worker::*;

/// The internal request a Worker sends its profile object.
#[derive(Deserialize)]
pub struct Call {
    pub name: String,
    pub op: String,
    #[serde(default)]
    pub args: Value,
}

#[durable_object]
pub struct ProfileObject {
    state: State,
    env: Env,
    sql: DoSql,
    /// Set when migrations failed: every call reports it.
    broken: Option<Error>,
}

fn now() -> i64 {
    js_sys::Date::now() as i64
}

impl ProfileObject {
    async fn run(&self, call: Call) -> std::result::Result<Value, Error> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        let config = Config::from_env(&self.env);
        let providers = Providers::new(&config, &self.env, &call.name)?;
        let index = providers.index(&self.sql);
        let profile = Profile {
            name: &call.name,
            sql: &self.sql,
            reasoner: providers.reasoner(),
            embedder: providers.embedder(),
            index: index.as_ref(),
            now: now(),
            limits: Limits { max_memories: config.max_memories },
        };
        let out = profile.dispatch(&call.op, call.args).await;
        if out.is_ok() && call.op != "deleteProfile" {
            let _ = profile.store().meta_set("name", &call.name);
        }
        self.schedule(&profile).await;
        out
    }

    /// Makes sure an alarm is set for the earliest pending job or expiry.
    async fn schedule(&self, profile: &Profile<'_>) {
        let store = profile.store();
        let due = match (store.next_job_at(), store.next_expiry()) {
            (Ok(a), Ok(b)) => match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            _ => None,
        };
        let Some(due) = due else { return };
        let storage = self.state.storage();
        let current = storage.get_alarm().await.ok().flatten();
        if current.is_none_or(|c| c > due) {
            let _ = storage.set_alarm(due.max(now() + 1)).await;
        }
    }
}

impl DurableObject for ProfileObject {
    fn new(state: State, env: Env) -> Self {
        let sql = DoSql::new(state.storage());
        let broken = crate::core::schema::migrate(&sql).err();
        ProfileObject { state, env, sql, broken }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let call: Call = match req.json().await {
            Ok(c) => c,
            Err(e) => return reply(Err(Error::invalid(format!("bad internal call: {e}")))),
        };
        reply(self.run(call).await)
    }

    async fn alarm(&self) -> Result<Response> {
        let name = crate::core::store::Store::new(&self.sql, now()).meta_get("name").ok().flatten().unwrap_or_default();
        let config = Config::from_env(&self.env);
        let providers = Providers::new(&config, &self.env, &name).map_err(|e| worker::Error::RustError(e.to_string()))?;
        let index = providers.index(&self.sql);
        let profile = Profile {
            name: &name,
            sql: &self.sql,
            reasoner: providers.reasoner(),
            embedder: providers.embedder(),
            index: index.as_ref(),
            now: now(),
            limits: Limits { max_memories: config.max_memories },
        };
        // A failed job is recorded on the job itself; the drain succeeds
        // and the next alarm retries it after its backoff.
        let report = profile.drain().await.map_err(|e| worker::Error::RustError(e.to_string()))?;
        if let Some(at) = report.next_at {
            self.state.storage().set_alarm(at.max(now() + 1)).await?;
        }
        Response::ok("drained")
    }
}

fn reply(out: std::result::Result<Value, Error>) -> Result<Response> {
    Response::from_json(&match out {
        Ok(v) => json!({ "ok": v }),
        Err(e) => json!({ "error": { "code": e.code(), "message": e.message() } }),
    })
}
