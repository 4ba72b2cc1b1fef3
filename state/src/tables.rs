//! The state's SQLite tables (documented for users in `docs/state-layout.md`), created
//! on first use and checked on every open.
//!
//! Version 1:
//!
//! ```sql
#![doc = include_str!("tables.sql")]
//! ```

use crate::StateError;
use rusqlite::{Connection, OptionalExtension};
use std::path::Path;

/// What a state database names itself under the `layout` key of `soif_state_meta`.
pub const TABLES_NAME: &str = "soif-state";
/// The version of the tables this soif writes and reads (`layout_version` in
/// `soif_state_meta`).
pub const TABLES_VERSION: i64 = 1;
/// `PRAGMA application_id` of a state file ("SOST"), so `file(1)` and soif can tell it
/// from a catalog or any other SQLite database.
pub const APPLICATION_ID: i32 = 0x534f_5354;

const SCHEMA: &str = include_str!("tables.sql");

/// Creates the tables in an empty database, or checks an existing one.
pub(crate) fn init(conn: &Connection, path: &Path) -> Result<(), StateError> {
    let sql = |context: &str, e| StateError::Sqlite {
        path: path.to_path_buf(),
        context: context.to_string(),
        source: e,
    };
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
            [],
            |r| r.get(0),
        )
        .map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
                StateError::NotAState {
                    path: path.to_path_buf(),
                    reason: "not an SQLite database".to_string(),
                }
            }
            e => sql("reading the layout", e),
        })?;
    if tables == 0 {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE;
             {SCHEMA}
             INSERT INTO soif_state_meta (key, value) VALUES
               ('layout', '{TABLES_NAME}'), ('layout_version', '{TABLES_VERSION}'),
               ('created', '{}');
             PRAGMA application_id = {APPLICATION_ID};
             COMMIT;",
            crate::now_rfc3339()
        ))
        .map_err(|e| sql("creating the state layout", e))?;
        return Ok(());
    }
    check(conn, path)
}

/// Checks that an existing database is a state store this soif can read.
pub(crate) fn check(conn: &Connection, path: &Path) -> Result<(), StateError> {
    let not = |reason: &str| StateError::NotAState {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    let meta = |key: &str| -> Option<String> {
        conn.query_row(
            "SELECT value FROM soif_state_meta WHERE key = ?1",
            [key],
            |r| r.get(0),
        )
        .optional()
        .ok()
        .flatten()
    };
    if meta("layout").as_deref() != Some(TABLES_NAME) {
        return Err(not("no soif_state_meta table naming the layout soif-state"));
    }
    let version: i64 = meta("layout_version")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| not("no layout_version"))?;
    if version > TABLES_VERSION {
        return Err(StateError::TooNew {
            path: path.to_path_buf(),
            found: version,
            supported: TABLES_VERSION,
        });
    }
    Ok(())
}
