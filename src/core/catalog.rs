//! The namespace catalog: which namespaces exist and which profiles each
//! holds. One catalog serves a deployment (a deployment is one account: the
//! account id in a path is accepted, not checked); the Cloudflare glue keeps
//! it in one small Durable Object, native tests in SQLite.
//!
//! - Namespaces are made explicitly (`create`, 409 with code 10008 when the
//!   name is taken) or implicitly: the first write into a profile of a
//!   namespace nobody created creates it, as profiles are created by their
//!   first write. Local development so needs no setup step.
//! - A profile registers itself on its first write ([`Catalog::register`]),
//!   so the catalog knows what a namespace's deletion must purge, and
//!   lists it ([`Catalog::list_profiles`], the API schema's "List
//!   profiles": by name, each with when it was first recorded). A profile
//!   marked for deletion leaves the list ([`Catalog::unregister`]: it stays
//!   recorded, unlisted, so that a namespace's deletion still purges it)
//!   and is listed again on its next write or its restore.
//! - Deleting a namespace removes it from the catalog at once (its name can
//!   be created again) and records a purge for each of its profiles. The
//!   caller purges them and reports each done ([`Catalog::purged`]); what
//!   is left is retried by the catalog's alarm with a backoff, and parked,
//!   visible in [`Catalog::pending_purges`], after [`MAX_PURGE_ATTEMPTS`].
//!   A profile written again before its purge ran is purged first: its
//!   registration answers `purge_first`.
//!
//! What it does not do: it holds no memories, and no request but the
//! namespace routes (a namespace's profile list among them), a profile's
//! first write, its deletion and its restore ever reaches it.

use crate::core::api;
use crate::core::error::{Error, Result};
use crate::core::ports::{Sql, SqlValue};
use crate::core::time::iso;
use serde::{Deserialize, Serialize};

/// The table the catalog's migrations are recorded in.
pub const MIGRATION_LOG: &str = "catalog_migrations";

/// The catalog's schema, versioned as the profiles' is.
pub const MIGRATIONS: &[(i64, &[&str])] = &[
    (
        1,
        &[
            "CREATE TABLE IF NOT EXISTS namespaces (
            name TEXT PRIMARY KEY,
            id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        )",
            "CREATE TABLE IF NOT EXISTS profiles (
            namespace TEXT NOT NULL,
            profile TEXT NOT NULL,
            PRIMARY KEY (namespace, profile)
        )",
            "CREATE TABLE IF NOT EXISTS purges (
            namespace TEXT NOT NULL,
            profile TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            due_at INTEGER NOT NULL,
            last_error TEXT,
            PRIMARY KEY (namespace, profile)
        )",
        ],
    ),
    // When each profile was first recorded, for its listing, and whether
    // it is left out of it (marked for deletion). Profiles recorded before
    // it take their namespace's creation (the earliest they can have
    // been).
    (
        2,
        &[
            "ALTER TABLE profiles ADD COLUMN created_at INTEGER",
            "ALTER TABLE profiles ADD COLUMN unlisted INTEGER NOT NULL DEFAULT 0",
            "UPDATE profiles SET created_at = (SELECT n.created_at FROM namespaces n WHERE n.name = profiles.namespace) WHERE created_at IS NULL",
        ],
    ),
];

/// Default and largest page of `list` (the published limits: 1 to 1,000,
/// default 20).
pub const DEFAULT_PAGE: usize = 20;
pub const MAX_PAGE: usize = 1000;
/// Purge attempts before one is parked.
pub const MAX_PURGE_ATTEMPTS: i64 = 8;
/// First retry delay of a failed purge; doubled for each attempt.
pub const PURGE_RETRY_BASE_MILLIS: i64 = 5_000;

/// A namespace as the published HTTP API shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Namespace {
    pub id: String,
    #[schemars(with = "crate::core::wire::Name")]
    pub name: String,
    /// The account id of the path it was read through (one account per
    /// deployment); wrangler reads it.
    pub account_id: String,
    pub created_at: String,
    pub updated_at: String,
}

/// Which namespaces a list may show: every one (a token granted `*`), or
/// only those named (the token's grant). The filter is part of the query,
/// so a page, its cursor and its count are made of visible namespaces only
/// and a page is as full as the visible ones allow: a page filtered after
/// it was read would end on, and hand out as its cursor, a name the token
/// may not see.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Visible {
    All,
    Only(Vec<String>),
}

/// A page of namespaces: `cursor` is empty on the last page, as the HTTP
/// API's `result_info` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NamespacePage {
    pub namespaces: Vec<Namespace>,
    pub cursor: String,
    pub per_page: usize,
}

/// A profile as the API schema's profile list shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileEntry {
    /// The profile's name.
    #[schemars(with = "crate::core::wire::ProfileName")]
    pub name: String,
    /// When the profile was first recorded in its namespace (its first
    /// write, or its first since it was deleted).
    pub created_at: String,
}

/// A page of a namespace's profiles, by name: `cursor` is the next page's,
/// absent on the last one (as the API schema's `result_info` shows it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfilePage {
    pub profiles: Vec<ProfileEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    pub per_page: usize,
}

/// A profile page's cursor: the last name of the page before, written in
/// hex so that it fits the API schema's `^[A-Za-z0-9_-]+$` whatever the
/// name holds (a profile name may hold `.`, `@` and `+`).
fn profile_cursor(name: &str) -> String {
    name.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The profile name a cursor of [`profile_cursor`] names; anything else is
/// no cursor this service returned (400), never read as "from the start".
/// Empty or absent: the first page.
fn profile_after(cursor: Option<&str>) -> Result<String> {
    let refused = || Error::invalid("cursor is not one this service returned");
    let Some(c) = cursor.filter(|c| !c.is_empty()) else { return Ok(String::new()) };
    if c.len() % 2 != 0 || !c.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(refused());
    }
    let bytes = c.as_bytes().chunks(2).map(|h| std::str::from_utf8(h).ok().and_then(|h| u8::from_str_radix(h, 16).ok())).collect::<Option<Vec<u8>>>();
    let name = bytes.and_then(|b| String::from_utf8(b).ok()).ok_or_else(refused)?;
    api::validate_profile(&name).map_err(|_| refused())?;
    Ok(name)
}

/// The purges due now, as `(namespace, profile)`, and when the next one
/// falls due (epoch millis).
pub type DuePurges = (Vec<(String, String)>, Option<i64>);

/// A profile whose purge is recorded and not yet done.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Purge {
    pub namespace: String,
    pub profile: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub parked: bool,
}

/// What a profile's registration tells it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    /// The profile belongs to a deleted namespace and was not purged yet:
    /// it must wipe itself before taking the write.
    pub purge_first: bool,
}

/// The order of a page of namespaces: `order` (`id` or `name`) and
/// `direction` (`asc` or `desc`), as the API reference's list takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceOrder {
    pub by_id: bool,
    pub descending: bool,
}

impl NamespaceOrder {
    /// From the query's `order` and `direction`; a value neither names is
    /// refused (400), never read as the default.
    pub fn parse(order: Option<&str>, direction: Option<&str>) -> Result<NamespaceOrder> {
        let by_id = match order {
            None | Some("name") => false,
            Some("id") => true,
            Some(other) => return Err(Error::invalid(format!("order must be id or name, not {}", api::quoted(other)))),
        };
        let descending = match direction {
            None | Some("asc") => false,
            Some("desc") => true,
            Some(other) => return Err(Error::invalid(format!("direction must be asc or desc, not {}", api::quoted(other)))),
        };
        Ok(NamespaceOrder { by_id, descending })
    }

    /// The column pages are ordered and cut by, and its SQL order.
    fn sql(self) -> (&'static str, &'static str, &'static str) {
        let column = if self.by_id { "id" } else { "name" };
        if self.descending {
            (column, "<", "DESC")
        } else {
            (column, ">", "ASC")
        }
    }
}

/// A call to the catalog, as the Worker sends it (`{"op": ..., ...}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
pub enum CatalogCall {
    Create {
        account: String,
        name: String,
    },
    List {
        account: String,
        per_page: Option<usize>,
        cursor: Option<String>,
        visible: Visible,
        /// The API reference's `order` and `direction` (by name, ascending
        /// when absent).
        #[serde(default)]
        order: NamespaceOrder,
    },
    Get {
        account: String,
        name: String,
    },
    Delete {
        name: String,
    },
    Register {
        namespace: String,
        profile: String,
        /// A restore: a profile listed again keeps the time it was first
        /// recorded (a write after its deletion starts a new profile).
        #[serde(default)]
        restored: bool,
    },
    /// A profile marked for deletion leaves its namespace's list.
    Unregister {
        namespace: String,
        profile: String,
    },
    /// A page of a namespace's profiles.
    ListProfiles {
        namespace: String,
        per_page: Option<usize>,
        cursor: Option<String>,
    },
    /// Whether [`CatalogCall::Register`] would tell the profile to purge
    /// first, changing nothing.
    PurgePending {
        namespace: String,
        profile: String,
    },
    Purged {
        namespace: String,
        profile: String,
        error: Option<String>,
    },
    DuePurges,
}

/// Where a page of namespaces starts: after the name (or, `by_id`, the
/// id) `cursor` (the last of the previous page), or at the first when
/// there is none or it is empty (the last page's, sent back). Anything
/// else is no name or id this service ever returned: refused, never read
/// as "from the start" (nor a name as an id, which would sort after
/// every id and answer an empty last page).
fn page_after(cursor: Option<&str>, by_id: bool) -> Result<&str> {
    let refused = || Error::invalid(format!("cursor is not one this service returned for namespaces by {}", if by_id { "id" } else { "name" }));
    match cursor {
        None | Some("") => Ok(""),
        Some(c) if by_id => crate::core::ids::is_id(c).then_some(c).ok_or_else(refused),
        Some(c) => api::validate_namespace(c).map(|()| c).map_err(|_| refused()),
    }
}

/// The catalog over its database, at time `now` (epoch millis).
pub struct Catalog<'a> {
    pub sql: &'a dyn Sql,
    pub now: i64,
}

impl Catalog<'_> {
    /// Runs one call; its result as JSON text.
    pub fn execute(&self, call: CatalogCall) -> Result<String> {
        match call {
            CatalogCall::Create { account, name } => json(&self.create(&account, &name)?),
            CatalogCall::List { account, per_page, cursor, visible, order } => {
                json(&self.list_ordered(&account, per_page, cursor.as_deref(), &visible, order)?)
            }
            CatalogCall::Get { account, name } => json(&self.get(&account, &name)?),
            CatalogCall::Delete { name } => json(&self.delete(&name)?),
            CatalogCall::Register { namespace, profile, restored } => json(&self.register_as(&namespace, &profile, restored)?),
            CatalogCall::Unregister { namespace, profile } => json(&self.unregister(&namespace, &profile)?),
            CatalogCall::ListProfiles { namespace, per_page, cursor } => json(&self.list_profiles(&namespace, per_page, cursor.as_deref())?),
            CatalogCall::PurgePending { namespace, profile } => json(&self.purge_pending(&namespace, &profile)?),
            CatalogCall::Purged { namespace, profile, error } => json(&self.purged(&namespace, &profile, error.as_deref())?),
            CatalogCall::DuePurges => json(&self.due_purges()?),
        }
    }

    /// Creates a namespace; 409 (code 10008) when the name is taken.
    pub fn create(&self, account: &str, name: &str) -> Result<Namespace> {
        api::validate_new_namespace(name)?;
        if self.row(name)?.is_some() {
            return Err(Error::already_exists("Namespace name already exists"));
        }
        self.insert(name)?;
        self.get(account, name)
    }

    /// A namespace by name; 404 when there is none.
    pub fn get(&self, account: &str, name: &str) -> Result<Namespace> {
        api::validate_namespace(name)?;
        let (id, created, updated) = self.row(name)?.ok_or_else(|| Error::not_found("Namespace not found"))?;
        Ok(Namespace { id, name: name.to_string(), account_id: account.to_string(), created_at: iso(created), updated_at: iso(updated) })
    }

    /// The `visible` namespaces by name, `per_page` at a time after
    /// `cursor` (the last name of the previous page). Only visible names
    /// are read, so none other can be a page's cursor.
    pub fn list(&self, account: &str, per_page: Option<usize>, cursor: Option<&str>, visible: &Visible) -> Result<NamespacePage> {
        self.list_ordered(account, per_page, cursor, visible, NamespaceOrder::default())
    }

    /// [`Catalog::list`] in `order`: by name or by id, either way; the
    /// cursor is the last page's last name or id.
    pub fn list_ordered(
        &self,
        account: &str,
        per_page: Option<usize>,
        cursor: Option<&str>,
        visible: &Visible,
        order: NamespaceOrder,
    ) -> Result<NamespacePage> {
        let per_page = per_page.unwrap_or(DEFAULT_PAGE);
        if per_page == 0 || per_page > MAX_PAGE {
            return Err(Error::invalid(format!("per_page must be 1-{MAX_PAGE}")));
        }
        let after = page_after(cursor, order.by_id)?;
        let limit = SqlValue::Integer(per_page.saturating_add(1) as i64);
        let (column, past, direction) = order.sql();
        // The first page (no cursor) starts at either end.
        let from = format!("(?1 = '' OR {column} {past} ?1)");
        let rows = match visible {
            Visible::All => self.sql.query(
                &format!("SELECT name, id, created_at, updated_at FROM namespaces WHERE {from} ORDER BY {column} {direction} LIMIT ?2"),
                &[after.into(), limit],
            )?,
            // The names travel as one JSON array: a grant may name more
            // namespaces than a query may bind parameters.
            Visible::Only(names) => self.sql.query(
                &format!(
                    "SELECT name, id, created_at, updated_at FROM namespaces WHERE {from} AND name IN (SELECT value FROM json_each(?3)) ORDER BY {column} {direction} LIMIT ?2"
                ),
                &[after.into(), limit, json(names)?.into()],
            )?,
        };
        let mut namespaces = rows
            .into_iter()
            .map(|r| match r.as_slice() {
                [name, id, created, updated] => Ok(Namespace {
                    id: text(id)?,
                    name: text(name)?,
                    account_id: account.to_string(),
                    created_at: iso(int(created)?),
                    updated_at: iso(int(updated)?),
                }),
                _ => Err(bad_row()),
            })
            .collect::<Result<Vec<_>>>()?;
        let more = namespaces.len() > per_page;
        namespaces.truncate(per_page);
        let key = |n: &Namespace| if order.by_id { n.id.clone() } else { n.name.clone() };
        let cursor = if more { namespaces.last().map(key).unwrap_or_default() } else { String::new() };
        Ok(NamespacePage { namespaces, cursor, per_page })
    }

    /// Deletes a namespace (404 when there is none) and records a purge of
    /// each of its profiles; returns them, for the caller to purge now.
    pub fn delete(&self, name: &str) -> Result<Vec<String>> {
        api::validate_namespace(name)?;
        if self.row(name)?.is_none() {
            return Err(Error::not_found("Namespace not found"));
        }
        let mut profiles = Vec::new();
        self.sql.transaction(&mut || {
            profiles = self
                .sql
                .query("SELECT profile FROM profiles WHERE namespace = ? ORDER BY profile", &[name.into()])?
                .iter()
                .map(|r| r.first().map_or_else(|| Err(bad_row()), text))
                .collect::<Result<Vec<_>>>()?;
            self.sql.execute(
                "INSERT INTO purges (namespace, profile, due_at) SELECT namespace, profile, ? FROM profiles WHERE namespace = ? \
                 ON CONFLICT (namespace, profile) DO UPDATE SET attempts = 0, due_at = excluded.due_at, last_error = NULL",
                &[self.now.into(), name.into()],
            )?;
            self.sql.execute("DELETE FROM profiles WHERE namespace = ?", &[name.into()])?;
            self.sql.execute("DELETE FROM namespaces WHERE name = ?", &[name.into()])
        })?;
        Ok(profiles)
    }

    /// A profile's first write: the namespace is created if nobody did, the
    /// profile recorded. A profile still waiting for its purge is told to
    /// purge first (and its purge is then done).
    pub fn register(&self, namespace: &str, profile: &str) -> Result<Registration> {
        self.register_as(namespace, profile, false)
    }

    /// [`Catalog::register`]; for a profile that was unlisted (marked for
    /// deletion), `restored` keeps the time it was first recorded, and
    /// otherwise (a write starting it anew) it is recorded now.
    pub fn register_as(&self, namespace: &str, profile: &str, restored: bool) -> Result<Registration> {
        api::validate_namespace(namespace)?;
        api::validate_profile(profile)?;
        let mut purge_first = false;
        self.sql.transaction(&mut || {
            purge_first = self.purge_recorded(namespace, profile)?;
            self.sql.execute("DELETE FROM purges WHERE namespace = ? AND profile = ?", &[namespace.into(), profile.into()])?;
            if self.row(namespace)?.is_none() {
                api::validate_new_namespace(namespace)?;
                self.insert(namespace)?;
            }
            self.sql.execute(
                "INSERT INTO profiles (namespace, profile, created_at) VALUES (?1, ?2, ?3) ON CONFLICT (namespace, profile) DO UPDATE \
                 SET created_at = CASE WHEN unlisted = 1 AND NOT ?4 THEN excluded.created_at ELSE created_at END, unlisted = 0",
                &[namespace.into(), profile.into(), self.now.into(), SqlValue::Integer(restored.into())],
            )
        })?;
        Ok(Registration { purge_first })
    }

    /// A profile marked for deletion: it leaves its namespace's list (its
    /// data stays until its purge; a restore or a write registers it
    /// again). It stays recorded, so a deletion of its namespace purges it
    /// too. A profile never recorded changes nothing.
    pub fn unregister(&self, namespace: &str, profile: &str) -> Result<()> {
        api::validate_namespace(namespace)?;
        api::validate_profile(profile)?;
        self.sql.execute("UPDATE profiles SET unlisted = 1 WHERE namespace = ? AND profile = ?", &[namespace.into(), profile.into()])
    }

    /// The profiles of `namespace` (404 when there is none) by name,
    /// `per_page` at a time after `cursor` (the page before's, from
    /// [`profile_cursor`]).
    pub fn list_profiles(&self, namespace: &str, per_page: Option<usize>, cursor: Option<&str>) -> Result<ProfilePage> {
        api::validate_namespace(namespace)?;
        let per_page = per_page.unwrap_or(DEFAULT_PAGE);
        if per_page == 0 || per_page > MAX_PAGE {
            return Err(Error::invalid(format!("per_page must be 1-{MAX_PAGE}")));
        }
        let after = profile_after(cursor)?;
        if self.row(namespace)?.is_none() {
            return Err(Error::not_found("Namespace not found"));
        }
        let rows = self.sql.query(
            "SELECT profile, created_at FROM profiles WHERE namespace = ?1 AND profile > ?2 AND unlisted = 0 ORDER BY profile LIMIT ?3",
            &[namespace.into(), after.into(), SqlValue::Integer(per_page.saturating_add(1) as i64)],
        )?;
        let mut profiles = rows
            .iter()
            .map(|r| match r.as_slice() {
                [name, created] => Ok(ProfileEntry { name: text(name)?, created_at: iso(int(created)?) }),
                _ => Err(bad_row()),
            })
            .collect::<Result<Vec<_>>>()?;
        let more = profiles.len() > per_page;
        profiles.truncate(per_page);
        let cursor = if more { profiles.last().map(|p| profile_cursor(&p.name)) } else { None };
        Ok(ProfilePage { profiles, cursor, per_page })
    }

    /// What [`Catalog::register`] would answer now, recording nothing: a
    /// profile asks before it checks a write, so a write refused then
    /// neither registers it (nor creates its namespace) nor purges it.
    pub fn purge_pending(&self, namespace: &str, profile: &str) -> Result<Registration> {
        api::validate_namespace(namespace)?;
        api::validate_profile(profile)?;
        Ok(Registration { purge_first: self.purge_recorded(namespace, profile)? })
    }

    fn purge_recorded(&self, namespace: &str, profile: &str) -> Result<bool> {
        let rows = self.sql.query("SELECT 1 FROM purges WHERE namespace = ? AND profile = ?", &[namespace.into(), profile.into()])?;
        Ok(!rows.is_empty())
    }

    /// Records the outcome of a purge: done (`error` none), or failed, to
    /// be retried after a backoff, and parked after [`MAX_PURGE_ATTEMPTS`].
    pub fn purged(&self, namespace: &str, profile: &str, error: Option<&str>) -> Result<()> {
        let key = [namespace.into(), profile.into()];
        match error {
            None => self.sql.execute("DELETE FROM purges WHERE namespace = ? AND profile = ?", &key),
            Some(e) => {
                let rows = self.sql.query("SELECT attempts FROM purges WHERE namespace = ? AND profile = ?", &key)?;
                let attempts = rows.first().and_then(|r| r.first()).map_or(Ok(0), int)?.saturating_add(1);
                let backoff = PURGE_RETRY_BASE_MILLIS.saturating_mul(1i64 << attempts.clamp(0, 20));
                self.sql.execute(
                    "UPDATE purges SET attempts = ?, due_at = ?, last_error = ? WHERE namespace = ? AND profile = ?",
                    &[attempts.into(), self.now.saturating_add(backoff).into(), e.into(), namespace.into(), profile.into()],
                )
            }
        }
    }

    /// Purges due now (not parked), as `(namespace, profile)`, and when the
    /// next one falls due.
    pub fn due_purges(&self) -> Result<DuePurges> {
        let due = self
            .sql
            .query(
                "SELECT namespace, profile FROM purges WHERE due_at <= ? AND attempts < ? ORDER BY due_at LIMIT 64",
                &[self.now.into(), MAX_PURGE_ATTEMPTS.into()],
            )?
            .iter()
            .map(|r| match r.as_slice() {
                [ns, p] => Ok((text(ns)?, text(p)?)),
                _ => Err(bad_row()),
            })
            .collect::<Result<Vec<_>>>()?;
        let next = crate::core::ports::aggregate_i64(
            &self.sql.query("SELECT MIN(due_at) FROM purges WHERE attempts < ?", &[MAX_PURGE_ATTEMPTS.into()])?,
            "the next purge's time",
        )?;
        Ok((due, next))
    }

    /// Every purge not done yet, parked ones included.
    pub fn pending_purges(&self) -> Result<Vec<Purge>> {
        self.sql
            .query("SELECT namespace, profile, attempts, last_error FROM purges ORDER BY namespace, profile", &[])?
            .iter()
            .map(|r| match r.as_slice() {
                [ns, p, attempts, error] => {
                    let attempts = int(attempts)?;
                    Ok(Purge { namespace: text(ns)?, profile: text(p)?, attempts, last_error: error.opt_string(), parked: attempts >= MAX_PURGE_ATTEMPTS })
                }
                _ => Err(bad_row()),
            })
            .collect()
    }

    fn insert(&self, name: &str) -> Result<()> {
        let id = crate::core::ids::memory_id(self.now, &format!("namespace:{name}"), 0);
        self.sql.execute(
            "INSERT INTO namespaces (name, id, created_at, updated_at) VALUES (?, ?, ?, ?)",
            &[name.into(), id.into(), self.now.into(), self.now.into()],
        )
    }

    /// `(id, created_at, updated_at)` of a namespace.
    fn row(&self, name: &str) -> Result<Option<(String, i64, i64)>> {
        let rows = self.sql.query("SELECT id, created_at, updated_at FROM namespaces WHERE name = ?", &[name.into()])?;
        match rows.first().map(Vec::as_slice) {
            None => Ok(None),
            Some([id, created, updated]) => Ok(Some((text(id)?, int(created)?, int(updated)?))),
            Some(_) => Err(bad_row()),
        }
    }
}

/// A call's result, read back from the JSON text [`Catalog::execute`]
/// wrote.
pub fn reply<T: serde::de::DeserializeOwned>(text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::storage(format!("failed to read the catalog's reply: {e}")))
}

/// A result as JSON text.
fn json<T: Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::storage(format!("failed to write a catalog result: {e}")))
}

fn bad_row() -> Error {
    Error::storage("a catalog row does not read")
}

fn text(v: &SqlValue) -> Result<String> {
    v.opt_string().ok_or_else(bad_row)
}

fn int(v: &SqlValue) -> Result<i64> {
    v.as_i64().ok_or_else(bad_row)
}
