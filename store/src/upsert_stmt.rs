//! The replacing upsert, prepared once and kept, bound without copies.
//!
//! Why not rusqlite's `prepare_cached`: it looks the statement up by its SQL, which for
//! an upsert naming every column is a kilobyte hashed twice per record, about a tenth of
//! the loader's thread on summary objects; and rusqlite binds every value with
//! `SQLITE_TRANSIENT`, so SQLite copies each one before copying it again into the row.
//! A rusqlite `Statement` cannot be kept instead: it borrows the connection and is not
//! `Send`. So this holds the raw statement, the one place the sink uses SQLite's C API.
//!
//! Safety rests on three rules, each kept in this module or by its one owner:
//! - it is finalized before its connection closes (the field holding it is declared
//!   before the connection in [`SqliteStore`], so it is dropped first, and it is
//!   dropped whenever the store re-reads its layout);
//! - values bound without a copy (`SQLITE_STATIC`) outlive the statement's use of them:
//!   [`UpsertStmt::run`] binds, steps and resets with the record borrowed, and clears
//!   the bindings before it returns, whatever happens;
//! - it is used by one thread at a time, with its connection (`SqliteStore` is `Send`,
//!   not `Sync`).

use rusqlite::ffi;
use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use rusqlite::Connection;
use std::ffi::{c_int, CStr};
use std::ptr::NonNull;

pub(crate) struct UpsertStmt {
    stmt: NonNull<ffi::sqlite3_stmt>,
    db: *mut ffi::sqlite3,
    /// The SQL it was prepared from (the store's `Table::upsert_sql`).
    sql: String,
}

// SAFETY: SQLite connections (and their statements) may move between threads when
// used by one at a time (SQLite's default serialized mode); `SqliteStore`, which owns
// both, is not `Sync`.
unsafe impl Send for UpsertStmt {}

impl Drop for UpsertStmt {
    fn drop(&mut self) {
        // SAFETY: the statement is valid until this, its only finalization.
        unsafe {
            ffi::sqlite3_finalize(self.stmt.as_ptr());
        }
    }
}

fn error(db: *mut ffi::sqlite3, rc: c_int) -> rusqlite::Error {
    // SAFETY: `db` is the statement's open connection; errmsg returns a valid
    // NUL-terminated string owned by SQLite, copied here at once.
    let message = unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(db)) }
        .to_string_lossy()
        .into_owned();
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(message))
}

impl UpsertStmt {
    /// Prepares `sql` on `conn`.
    pub(crate) fn prepare(conn: &Connection, sql: &str) -> rusqlite::Result<UpsertStmt> {
        // SAFETY: the handle is used only while `conn` is borrowed, to prepare; the
        // statement is finalized before the connection closes (see the module doc).
        let db = unsafe { conn.handle() };
        let mut stmt = std::ptr::null_mut();
        let len = c_int::try_from(sql.len()).map_err(|_| {
            rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_TOOBIG), None)
        })?;
        // SAFETY: `sql` is valid for `len` bytes; `stmt` receives the statement.
        let rc = unsafe {
            ffi::sqlite3_prepare_v3(
                db,
                sql.as_ptr().cast(),
                len,
                ffi::SQLITE_PREPARE_PERSISTENT as _,
                &mut stmt,
                std::ptr::null_mut(),
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(error(db, rc));
        }
        let stmt = NonNull::new(stmt).ok_or_else(|| {
            rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_MISUSE), None)
        })?;
        Ok(UpsertStmt {
            stmt,
            db,
            sql: sql.to_string(),
        })
    }

    /// Whether this is the statement for `sql`.
    pub(crate) fn is_for(&self, sql: &str) -> bool {
        self.sql == sql
    }

    /// Binds `params` (as `?1`, `?2`, …), runs the statement once, and leaves it
    /// reset with no bindings.
    pub(crate) fn run(&mut self, params: &[ToSqlOutput<'_>]) -> rusqlite::Result<()> {
        let result = self.bind_and_step(params);
        // SAFETY: a valid statement; after these, no binding refers to `params`.
        unsafe {
            ffi::sqlite3_reset(self.stmt.as_ptr());
            ffi::sqlite3_clear_bindings(self.stmt.as_ptr());
        }
        result
    }

    fn bind_and_step(&mut self, params: &[ToSqlOutput<'_>]) -> rusqlite::Result<()> {
        let st = self.stmt.as_ptr();
        for (i, p) in params.iter().enumerate() {
            let index = c_int::try_from(i + 1).unwrap_or(c_int::MAX);
            // Borrowed bytes are bound as they are (SQLITE_STATIC); owned text is
            // copied (SQLITE_TRANSIENT), since it is dropped first.
            let (bytes, text, destructor) = match p {
                ToSqlOutput::Borrowed(ValueRef::Null) | ToSqlOutput::Owned(SqlValue::Null) => {
                    (None, false, ffi::SQLITE_STATIC())
                }
                ToSqlOutput::Borrowed(ValueRef::Text(b)) => (Some(*b), true, ffi::SQLITE_STATIC()),
                ToSqlOutput::Borrowed(ValueRef::Blob(b)) => (Some(*b), false, ffi::SQLITE_STATIC()),
                ToSqlOutput::Owned(SqlValue::Text(t)) => {
                    (Some(t.as_bytes()), true, ffi::SQLITE_TRANSIENT())
                }
                _ => {
                    return Err(rusqlite::Error::ToSqlConversionFailure(
                        "unexpected parameter kind for the upsert".into(),
                    ))
                }
            };
            // SAFETY: `st` is valid; borrowed bytes stay alive until `run` resets and
            // clears the bindings.
            let rc = unsafe {
                match bytes {
                    None => ffi::sqlite3_bind_null(st, index),
                    Some(b) if text => ffi::sqlite3_bind_text64(
                        st,
                        index,
                        b.as_ptr().cast(),
                        b.len() as u64,
                        destructor,
                        ffi::SQLITE_UTF8 as _,
                    ),
                    Some(b) => ffi::sqlite3_bind_blob64(
                        st,
                        index,
                        b.as_ptr().cast(),
                        b.len() as u64,
                        destructor,
                    ),
                }
            };
            if rc != ffi::SQLITE_OK {
                return Err(error(self.db, rc));
            }
        }
        // SAFETY: a valid statement with every parameter bound.
        match unsafe { ffi::sqlite3_step(st) } {
            ffi::SQLITE_DONE => Ok(()),
            ffi::SQLITE_ROW => Ok(()),
            // The step's error (on a prepare_v3 statement, the real one).
            rc => Err(error(self.db, rc)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (url TEXT PRIMARY KEY, a NOT NULL, b)")
            .unwrap();
        conn
    }

    #[test]
    fn binds_text_blobs_nulls_and_owned_text_and_runs_again() {
        let conn = db();
        let mut st = UpsertStmt::prepare(&conn, "INSERT INTO t VALUES (?1, ?2, ?3)").unwrap();
        assert!(st.is_for("INSERT INTO t VALUES (?1, ?2, ?3)"));
        for i in 0..3 {
            // Fresh buffers each time, gone once `run` returns.
            let url = format!("http://x/{i}");
            let blob = vec![0xff, 0xfe, i as u8];
            st.run(&[
                ToSqlOutput::Borrowed(ValueRef::Text(url.as_bytes())),
                ToSqlOutput::Borrowed(ValueRef::Blob(&blob)),
                if i == 1 {
                    ToSqlOutput::Owned(SqlValue::Null)
                } else {
                    ToSqlOutput::Owned(SqlValue::Text(format!("owned {i}")))
                },
            ])
            .unwrap();
        }
        let rows: Vec<(String, Vec<u8>, Option<String>)> = conn
            .prepare("SELECT url, a, b FROM t ORDER BY url")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "http://x/0".into(),
                    vec![0xff, 0xfe, 0],
                    Some("owned 0".into())
                ),
                ("http://x/1".into(), vec![0xff, 0xfe, 1], None),
                (
                    "http://x/2".into(),
                    vec![0xff, 0xfe, 2],
                    Some("owned 2".into())
                ),
            ]
        );
    }

    #[test]
    fn errors_say_what_and_leave_it_usable() {
        let conn = db();
        assert!(UpsertStmt::prepare(&conn, "INSERT INTO nowhere VALUES (?1)").is_err());
        let mut st = UpsertStmt::prepare(&conn, "INSERT INTO t VALUES (?1, ?2, ?3)").unwrap();
        let e = st
            .run(&[
                ToSqlOutput::Borrowed(ValueRef::Text(b"u")),
                ToSqlOutput::Owned(SqlValue::Null),
                ToSqlOutput::Owned(SqlValue::Null),
            ])
            .unwrap_err();
        assert!(e.to_string().contains("NOT NULL constraint failed"), "{e}");
        // The code the store sorts errors by (a constraint: the record's fault).
        assert_eq!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::ConstraintViolation)
        );
        // Reset and cleared: the next run binds afresh and succeeds.
        st.run(&[
            ToSqlOutput::Borrowed(ValueRef::Text(b"u")),
            ToSqlOutput::Borrowed(ValueRef::Text(b"a")),
            ToSqlOutput::Owned(SqlValue::Null),
        ])
        .unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
        // A kind it does not bind is an error, not a silent NULL.
        let e = st
            .run(&[ToSqlOutput::Owned(SqlValue::Integer(1))])
            .unwrap_err();
        assert!(e.to_string().contains("unexpected parameter kind"), "{e}");
        // Dropped before the connection: finalized, so the connection closes cleanly.
        drop(st);
        conn.close().map_err(|(_, e)| e).unwrap();
    }
}
