//! The catalog Durable Object: one per deployment (named [`CATALOG_NAME`]),
//! owning the namespace catalog's SQLite database (`core::catalog`).
//! Migrations run in `new()`. A call arrives as a `CatalogCall`; a
//! namespace's deletion purges its profiles here, and the alarm retries
//! the purges that failed.

use crate::cloudflare::do_sql::DoSql;
use crate::core::catalog::{Catalog, CatalogCall};
use crate::core::error::Error;
use crate::core::op::Op;
use worker::*;

/// The one catalog object's name.
pub const CATALOG_NAME: &str = "catalog";

/// When the alarm comes back after it failed as a whole (a storage
/// error; a profile's failed purge has its own backoff in the catalog).
const PURGE_RETRY_MILLIS: i64 = 5 * 60 * 1000;

fn now() -> i64 {
    js_sys::Date::now() as i64
}

#[durable_object]
pub struct CatalogObject {
    state: State,
    env: Env,
    sql: DoSql,
    /// Set when migrations failed: every call reports it.
    broken: Option<Error>,
}

impl CatalogObject {
    fn catalog(&self) -> Catalog<'_> {
        Catalog { sql: &self.sql, now: now() }
    }

    /// Runs one call; its result as JSON text. A deletion purges the
    /// namespace's profiles before it answers; what fails is retried by
    /// the alarm.
    async fn run(&self, call: CatalogCall) -> std::result::Result<String, Error> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        let CatalogCall::Delete { name } = &call else {
            return self.catalog().execute(call);
        };
        let profiles = self.catalog().delete(name)?;
        let purges: Vec<(String, String)> = profiles.into_iter().map(|p| (name.clone(), p)).collect();
        self.purge(&purges).await?;
        Ok("null".to_string())
    }

    /// Purges each profile (a few at a time), records each outcome, and
    /// sets the alarm for what is left.
    async fn purge(&self, purges: &[(String, String)]) -> std::result::Result<(), Error> {
        const AT_ONCE: usize = 16;
        for batch in purges.chunks(AT_ONCE) {
            let outcomes = futures::future::join_all(batch.iter().map(|(ns, p)| {
                let name = crate::core::rest::object_name(ns, p);
                async move { crate::cloudflare::call_object_text(&self.env, &name, Op::Purge.name(), serde_json::json!({})).await }
            }))
            .await;
            for ((ns, p), outcome) in batch.iter().zip(outcomes) {
                let error = outcome.err().map(|e| e.message().to_string());
                self.catalog().purged(ns, p, error.as_deref())?;
            }
        }
        self.schedule().await
    }

    /// Sets the alarm for the next purge due, if any.
    async fn schedule(&self) -> std::result::Result<(), Error> {
        let (_, next) = self.catalog().due_purges()?;
        if let Some(at) = next {
            let alarm_error = |e: worker::Error| Error::storage(format!("failed to set the catalog's alarm: {e}"));
            self.state.storage().set_alarm((at - now()).max(1)).await.map_err(alarm_error)?;
        }
        Ok(())
    }
}

impl DurableObject for CatalogObject {
    fn new(state: State, env: Env) -> Self {
        let sql = DoSql::new(state.storage());
        let broken = crate::core::schema::migrate_set(&sql, crate::core::catalog::MIGRATION_LOG, crate::core::catalog::MIGRATIONS).err();
        CatalogObject { state, env, sql, broken }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let out = match req.text().await.map(|t| serde_json::from_str::<CatalogCall>(&t)) {
            Ok(Ok(call)) => self.run(call).await,
            Ok(Err(e)) => Err(Error::invalid(format!("bad internal call: {e}"))),
            Err(e) => Err(Error::invalid(format!("bad internal call: {e}"))),
        };
        crate::cloudflare::profile_object::reply(out)
    }

    async fn alarm(&self) -> Result<Response> {
        let outcome = match self.catalog().due_purges() {
            Ok((due, _)) => self.purge(&due).await,
            Err(e) => Err(e),
        };
        match outcome {
            Ok(()) => Response::ok("purged"),
            Err(e) => {
                // Not left to the platform's few retries of a failing
                // alarm: the purges still due come back on their own.
                console_error!("catalog: the purge alarm failed, retried in {} s: {e}", PURGE_RETRY_MILLIS / 1000);
                self.state.storage().set_alarm(PURGE_RETRY_MILLIS).await?;
                Response::ok("not purged: retried later")
            }
        }
    }
}
