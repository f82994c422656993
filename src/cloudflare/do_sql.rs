//! Durable Object SQL behind the core's `Sql` trait.

use crate::core::error::{Error, Result};
use crate::core::ports::{Row, Sql, SqlValue};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use worker::{SqlStorage, SqlStorageValue, Storage};

#[wasm_bindgen]
extern "C" {
    /// The part of `DurableObjectStorage` worker 0.8.7 does not wrap.
    type StorageExt;
    #[wasm_bindgen(method, catch, js_name = transactionSync)]
    fn transaction_sync(this: &StorageExt, f: &js_sys::Function) -> std::result::Result<JsValue, JsValue>;
}

pub struct DoSql {
    sql: SqlStorage,
    storage: Storage,
}

impl DoSql {
    pub fn new(storage: Storage) -> DoSql {
        DoSql { sql: storage.sql(), storage }
    }
}

fn to_do(v: &SqlValue) -> SqlStorageValue {
    match v {
        SqlValue::Null => SqlStorageValue::Null,
        SqlValue::Integer(i) => SqlStorageValue::Integer(*i),
        SqlValue::Real(f) => SqlStorageValue::Float(*f),
        SqlValue::Text(s) => SqlStorageValue::String(s.clone()),
        SqlValue::Blob(b) => SqlStorageValue::Blob(b.clone()),
    }
}

fn from_do(v: SqlStorageValue) -> SqlValue {
    match v {
        SqlStorageValue::Null => SqlValue::Null,
        SqlStorageValue::Boolean(b) => SqlValue::Integer(b as i64),
        SqlStorageValue::Integer(i) => SqlValue::Integer(i),
        SqlStorageValue::Float(f) => SqlValue::Real(f),
        SqlStorageValue::String(s) => SqlValue::Text(s),
        SqlStorageValue::Blob(b) => SqlValue::Blob(b),
    }
}

impl Sql for DoSql {
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>> {
        let binds: Vec<SqlStorageValue> = params.iter().map(to_do).collect();
        let cursor = self.sql.exec(sql, binds).map_err(|e| Error::storage(format!("failed to run sql: {e}")))?;
        cursor
            .raw()
            .map(|r| r.map(|vals| vals.into_iter().map(from_do).collect()))
            .collect::<worker::Result<Vec<Row>>>()
            .map_err(|e| Error::storage(format!("failed to read rows: {e}")))
    }

    fn transaction(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        let mut outcome: Option<Result<()>> = None;
        {
            let f_ptr: *mut (dyn FnMut() -> Result<()> + '_) = f;
            // SAFETY: transactionSync calls the callback synchronously and
            // returns before this block ends, so the borrows the pointers
            // erase outlive every use of them; the closure is dropped here.
            let f_ptr: *mut (dyn FnMut() -> Result<()> + 'static) = unsafe { std::mem::transmute(f_ptr) };
            let out_ptr: *mut Option<Result<()>> = &mut outcome;
            let cb = Closure::<dyn FnMut() -> std::result::Result<JsValue, JsValue>>::new(move || {
                let r = unsafe { (*f_ptr)() };
                let failed = r.is_err();
                unsafe { *out_ptr = Some(r) };
                if failed {
                    // Throwing makes the platform roll the transaction back.
                    Err(JsValue::from_str("rollback"))
                } else {
                    Ok(JsValue::UNDEFINED)
                }
            });
            let ext: &StorageExt = self.storage.as_raw().unchecked_ref();
            let js = ext.transaction_sync(cb.as_ref().unchecked_ref());
            if let (Err(e), None) = (&js, &outcome) {
                return Err(Error::storage(format!("failed to run transaction: {e:?}")));
            }
        }
        outcome.unwrap_or_else(|| Err(Error::storage("transaction callback did not run")))
    }

    fn database_size(&self) -> i64 {
        self.sql.database_size() as i64
    }
}
