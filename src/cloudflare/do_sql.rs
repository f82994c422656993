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

// Reading a result set value by value costs several calls across the Wasm
// boundary per value (worker's cursor iterator); a recall reads a few
// thousand values. This runs the statement and hands every row over at
// once: the rows as one JSON text, each blob as a Uint8Array in a side
// list that the JSON points to (`{"b": index}`). A result of one text
// value (a statement that builds its rows as JSON itself, see
// `core::store::json_rows`) is handed over as it is.
#[wasm_bindgen(inline_js = r#"
export function execRows(sql, query, binds) {
  const blobs = [];
  const rows = sql.exec(query, ...binds).raw().toArray();
  if (rows.length === 1 && rows[0].length === 1 && typeof rows[0][0] === "string") {
    return [null, blobs, rows[0][0]];
  }
  for (const row of rows) {
    for (let i = 0; i < row.length; i++) {
      const v = row[i];
      if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) {
        row[i] = { b: blobs.length };
        blobs.push(v instanceof ArrayBuffer ? new Uint8Array(v) : new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
      }
    }
  }
  return [JSON.stringify(rows), blobs];
}
"#)]
extern "C" {
    #[wasm_bindgen(catch, js_name = execRows)]
    fn exec_rows(sql: &JsValue, query: &str, binds: &js_sys::Array) -> std::result::Result<js_sys::Array, JsValue>;
}

/// One value of a row as [`exec_rows`] encodes it.
enum Cell {
    Value(SqlValue),
    /// Index into the blob list.
    Blob(usize),
}

impl<'de> serde::Deserialize<'de> for Cell {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Cell, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Cell;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an SQL value")
            }
            fn visit_unit<E>(self) -> std::result::Result<Cell, E> {
                Ok(Cell::Value(SqlValue::Null))
            }
            fn visit_bool<E>(self, b: bool) -> std::result::Result<Cell, E> {
                Ok(Cell::Value(SqlValue::Integer(b as i64)))
            }
            fn visit_i64<E>(self, i: i64) -> std::result::Result<Cell, E> {
                Ok(Cell::Value(SqlValue::Integer(i)))
            }
            fn visit_u64<E: serde::de::Error>(self, u: u64) -> std::result::Result<Cell, E> {
                Ok(Cell::Value(i64::try_from(u).map(SqlValue::Integer).unwrap_or(SqlValue::Real(u as f64))))
            }
            fn visit_f64<E>(self, f: f64) -> std::result::Result<Cell, E> {
                // A JavaScript number: integral and safe reads as an integer,
                // as worker's own conversion does.
                if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_991.0 {
                    Ok(Cell::Value(SqlValue::Integer(f as i64)))
                } else {
                    Ok(Cell::Value(SqlValue::Real(f)))
                }
            }
            fn visit_str<E>(self, s: &str) -> std::result::Result<Cell, E> {
                Ok(Cell::Value(SqlValue::Text(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> std::result::Result<Cell, E> {
                Ok(Cell::Value(SqlValue::Text(s)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> std::result::Result<Cell, A::Error> {
                let mut index = None;
                while let Some((k, v)) = m.next_entry::<String, usize>()? {
                    if k == "b" {
                        index = Some(v);
                    }
                }
                index.map(Cell::Blob).ok_or_else(|| serde::de::Error::custom("a blob reference needs b"))
            }
        }
        d.deserialize_any(V)
    }
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

impl Sql for DoSql {
    fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>> {
        let binds = js_sys::Array::new();
        for p in params {
            binds.push(&to_do(p).into());
        }
        let out = exec_rows(self.sql.as_ref(), sql, &binds).map_err(|e| Error::storage(format!("failed to run sql: {}", super::js_error_message(&e))))?;
        let Some(text) = out.get(0).as_string() else {
            // One text value, as it is.
            return Ok(vec![vec![SqlValue::Text(out.get(2).as_string().unwrap_or_default())]]);
        };
        let blobs = js_sys::Array::from(&out.get(1));
        let cells: Vec<Vec<Cell>> = serde_json::from_str(&text).map_err(|e| Error::storage(format!("failed to read rows: {e}")))?;
        Ok(cells
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|c| match c {
                        Cell::Value(v) => v,
                        Cell::Blob(i) => SqlValue::Blob(blobs.get(i as u32).unchecked_into::<js_sys::Uint8Array>().to_vec()),
                    })
                    .collect()
            })
            .collect())
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
            // A throw the body did not ask for (it never ran, or it
            // succeeded and the commit failed) is the transaction's error:
            // nothing was written.
            if let (Err(e), None | Some(Ok(()))) = (&js, &outcome) {
                return Err(Error::storage(format!("failed to run transaction: {e:?}")));
            }
        }
        outcome.unwrap_or_else(|| Err(Error::storage("transaction callback did not run")))
    }

    fn database_size(&self) -> i64 {
        self.sql.database_size() as i64
    }
}
