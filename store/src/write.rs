//! Writing records: upserts (a record replaces its row, or merges into it inside
//! `@REFRESH { }`) and deletions (remembered in `soif_deletions`), one record at a time
//! inside the open transaction or one of their own.

use crate::store::{SqliteStore, StoreError};
use crate::table_cache::Scratch;
use crate::tables::{key_param, now, quote_ident};
use crate::upsert_stmt;
use bytes::Bytes;
use rusqlite::params;
use rusqlite::types::{ToSqlOutput, Value as SqlValue, ValueRef};
use soif_codecs::rules::text::{latin1, to_json, Charset};
use soif_codecs::{Action, Record, Value};

/// How [`SqliteStore::upsert_with`] treats a row that exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpsertMode {
    /// The row becomes exactly the record: columns it has no attribute for become NULL.
    /// What a full SOIF object (`@UPDATE`, no envelope) means.
    Replace,
    /// Only the record's attributes are written; other columns keep their values
    /// (sqlite-utils' `upsert`). What `@REFRESH` means: Harvest refreshes objects that did
    /// not change, possibly sending only some attributes (e.g. `Time-to-Live`).
    Merge,
}

/// A value as an SQL parameter: UTF-8 as TEXT, other bytes as a BLOB (or Latin-1 TEXT),
/// lists and parts as JSON text.
pub fn value_param(value: &Value, charset: Charset) -> ToSqlOutput<'_> {
    match value {
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Err(_) => match charset {
                Charset::Latin1 => ToSqlOutput::Owned(SqlValue::Text(latin1(b))),
                Charset::Utf8 => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
            },
        },
        other => ToSqlOutput::Owned(SqlValue::Text(to_json(other, charset).to_string())),
    }
}

/// The values of a name that occurs several times in one record, as its column holds
/// them: one JSON array, nothing dropped.
pub fn repeated_param<'a>(
    values: impl Iterator<Item = &'a Value>,
    charset: Charset,
) -> ToSqlOutput<'static> {
    let items: Vec<serde_json::Value> = values.map(|v| to_json(v, charset)).collect();
    ToSqlOutput::Owned(SqlValue::Text(serde_json::Value::Array(items).to_string()))
}

/// What a row holds for `record`: each attribute name, in order of first occurrence,
/// with the value its column gets ([`value_param`], or [`repeated_param`] for a repeated
/// name) — the rules [`SqliteStore::upsert`] writes by, for readers that compare a
/// record with its row (`soif verify`).
pub fn row_values(record: &Record, charset: Charset) -> Vec<(&Bytes, ToSqlOutput<'_>)> {
    let attrs = &record.attributes;
    let mut out = Vec::with_capacity(attrs.len());
    for (i, a) in attrs.iter().enumerate() {
        if attrs[..i].iter().any(|b| b.name == a.name) {
            continue;
        }
        let same = || attrs[i..].iter().filter(|b| b.name == a.name);
        let param = if same().count() > 1 {
            repeated_param(same().map(|b| &b.value), charset)
        } else {
            value_param(&a.value, charset)
        };
        out.push((&a.name, param));
    }
    out
}

/// Refuses a record that cannot be keyed in a table (no URL).
pub fn check_key(record: &Record) -> Result<(), StoreError> {
    if record.has_no_url() || record.url.is_empty() {
        return Err(StoreError::Rejected(
            "record has no URL (`-`); sqlite tables are keyed on url".into(),
        ));
    }
    Ok(())
}

impl SqliteStore {
    /// Stores a record in its template's table (creating the table and columns as
    /// needed): [`UpsertMode::Merge`] for a record inside `@REFRESH { … }`,
    /// [`UpsertMode::Replace`] otherwise. Records without a URL are rejected. The row's
    /// datestamp is the time of this write when the record's values changed (or the row
    /// is new), and stays as it was otherwise.
    pub fn upsert(&mut self, record: &Record) -> Result<(), StoreError> {
        let mode = match record.action {
            Some(Action::Refresh) => UpsertMode::Merge,
            _ => UpsertMode::Replace,
        };
        self.upsert_with(record, mode)
    }

    /// Stores a record with an explicit [`UpsertMode`].
    pub fn upsert_with(&mut self, record: &Record, mode: UpsertMode) -> Result<(), StoreError> {
        check_key(record)?;
        self.in_write(|s| s.upsert_in_tx(record, mode))
    }

    pub(crate) fn upsert_in_tx(
        &mut self,
        record: &Record,
        mode: UpsertMode,
    ) -> Result<(), StoreError> {
        self.ensure_table(&record.template)?;
        // Reused buffers: the hot path allocates nothing per record for a table whose
        // columns are known (values are bound borrowed; only JSON values are built).
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = self.upsert_row(record, mode, &mut scratch);
        self.scratch = scratch;
        result
    }

    /// Fills `col_of` with each attribute's column; false when some have none yet.
    pub(crate) fn lookup_columns(&self, record: &Record, col_of: &mut Vec<Option<usize>>) -> bool {
        col_of.clear();
        let by_attr = self.tables.get(&record.template).map(|t| &t.by_attr);
        let mut all = true;
        for a in &record.attributes {
            let c = by_attr.and_then(|m| m.get(&a.name).copied());
            all &= c.is_some();
            col_of.push(c);
        }
        all
    }

    pub(crate) fn upsert_row(
        &mut self,
        record: &Record,
        mode: UpsertMode,
        sc: &mut Scratch,
    ) -> Result<(), StoreError> {
        // Each attribute's column, looked up once; new names first get their columns.
        if !self.lookup_columns(record, &mut sc.col_of) {
            let mut missing: Vec<Bytes> = Vec::new();
            for (a, c) in record.attributes.iter().zip(&sc.col_of) {
                if c.is_none() && !missing.contains(&a.name) {
                    missing.push(a.name.clone());
                }
            }
            self.add_columns(&record.template, &missing)?;
            self.lookup_columns(record, &mut sc.col_of);
        }
        let charset = self.charset;
        let Some(table) = self.tables.get_mut(&record.template) else {
            return Ok(());
        };
        let ncols = table.info.columns.len();
        // Which attribute goes to each column (usually exactly one or none).
        sc.first.clear();
        sc.first.resize(ncols, None);
        let mut repeated = false;
        for (i, c) in sc.col_of.iter().enumerate() {
            if let Some(c) = *c {
                if sc.first[c].is_some() {
                    repeated = true;
                } else {
                    sc.first[c] = Some(i);
                }
            }
        }
        // How many attributes go to column `c` (more than one only for repeated names).
        let col_of = &sc.col_of;
        let count = |c: usize| {
            if repeated {
                col_of.iter().filter(|&&x| x == Some(c)).count()
            } else {
                1
            }
        };
        // The columns this record has, in table order; those getting their first JSON
        // value now are marked in soif_columns after the row is written.
        sc.present.clear();
        sc.newly_json.clear();
        for (c, slot) in sc.first.iter().enumerate() {
            let Some(i) = *slot else { continue };
            sc.present.push(c);
            let is_json = !matches!(record.attributes[i].value, Value::Bytes(_)) || count(c) > 1;
            if is_json && !table.info.columns[c].json {
                sc.newly_json.push(c);
            }
        }
        let merge = mode == UpsertMode::Merge;
        let stamp: &str = sc.clock.now();
        // The parameters: url, then replace binds every column (NULL where the record
        // has no value); merge only the present ones, which its statement names.
        let mut params: Vec<ToSqlOutput<'_>> = Vec::with_capacity(sc.first.len() + 1);
        params.push(key_param(&record.url));
        for (c, slot) in sc.first.iter().enumerate() {
            match *slot {
                None if merge => continue,
                None => params.push(ToSqlOutput::Owned(SqlValue::Null)),
                Some(_) if count(c) > 1 => {
                    // The same name several times in one record: a JSON array, nothing
                    // dropped.
                    let values = record
                        .attributes
                        .iter()
                        .zip(col_of)
                        .filter(|(_, x)| **x == Some(c))
                        .map(|(a, _)| &a.value);
                    params.push(repeated_param(values, charset));
                }
                Some(i) => params.push(value_param(&record.attributes[i].value, charset)),
            }
        }
        // The datestamp, bound last (see `upsert_sql_for`).
        params.push(ToSqlOutput::Borrowed(ValueRef::Text(stamp.as_bytes())));
        let written = if merge {
            // `@REFRESH` merges: a statement per column set, from rusqlite's cache.
            let sql = table.merge_sql(&sc.present);
            self.conn.prepare_cached(sql).and_then(|mut st| {
                for (i, p) in params.iter().enumerate() {
                    st.raw_bind_parameter(i + 1, p)?;
                }
                st.raw_execute().map(|_| ())
            })
        } else {
            // Everything else replaces, through the one kept statement.
            let sql = &table.upsert_sql;
            let slot = &mut self.upsert;
            let prepared = match slot {
                Some(st) if st.is_for(sql) => Ok(()),
                _ => {
                    *slot = None;
                    upsert_stmt::UpsertStmt::prepare(&self.conn, sql).map(|st| *slot = Some(st))
                }
            };
            prepared.and_then(|()| slot.as_mut().map_or(Ok(()), |st| st.run(&params)))
        };
        if let Err(e) = written {
            let name = self
                .tables
                .get(&record.template)
                .map(|t| t.info.table.as_str());
            return Err(self.err(&format!("upserting into {}", name.unwrap_or("?")), e));
        }
        if !sc.newly_json.is_empty() {
            self.mark_json(&record.template, &sc.newly_json)?;
        }
        if self.deletions_exist {
            self.conn
                .prepare_cached("DELETE FROM soif_deletions WHERE template = ?1 AND url = ?2")
                .and_then(|mut st| {
                    st.execute(params![key_param(&record.template), key_param(&record.url)])
                })
                .map_err(|e| self.err("clearing soif_deletions", e))?;
        }
        Ok(())
    }

    /// Records that these columns now hold JSON (same transaction as the row).
    pub(crate) fn mark_json(
        &mut self,
        template: &Bytes,
        columns: &[usize],
    ) -> Result<(), StoreError> {
        let Some(table) = self.tables.get(template) else {
            return Ok(());
        };
        let name = table.info.table.clone();
        for &c in columns {
            self.conn
                .execute(
                    "UPDATE soif_columns SET json = 1 WHERE table_name = ?1 AND position = ?2",
                    params![name, (c + 1) as i64],
                )
                .map_err(|e| self.err("marking a JSON column in soif_columns", e))?;
        }
        if let Some(t) = self.tables.get_mut(template) {
            for &c in columns {
                t.info.columns[c].json = true;
            }
        }
        Ok(())
    }

    /// Deletes the row for `url` from `template`'s table (from every table when
    /// `template` is `None`) and remembers the deletion in `soif_deletions` (under every
    /// known template when `None`). Returns the number of rows deleted.
    pub fn delete(&mut self, template: Option<&[u8]>, url: &[u8]) -> Result<usize, StoreError> {
        self.delete_in_run(template, url, None)
    }

    pub(crate) fn delete_in_run(
        &mut self,
        template: Option<&[u8]>,
        url: &[u8],
        run_id: Option<i64>,
    ) -> Result<usize, StoreError> {
        if url == b"-" || url.is_empty() {
            return Err(StoreError::Rejected(
                "deletion without a URL (`-`); sqlite rows are keyed on url".into(),
            ));
        }
        self.in_write(|s| {
            let targets: Vec<(Bytes, Option<String>)> = match template {
                Some(t) => vec![(
                    Bytes::copy_from_slice(t),
                    s.tables.get(t).map(|x| x.info.table.clone()),
                )],
                None => s
                    .tables
                    .values()
                    .map(|x| (x.info.template.clone(), Some(x.info.table.clone())))
                    .collect(),
            };
            let mut deleted = 0;
            let when = now();
            for (tmpl, table) in targets {
                if let Some(table) = table {
                    let sql = format!("DELETE FROM {} WHERE \"url\" = ?1", quote_ident(&table));
                    deleted += s
                        .conn
                        .prepare_cached(&sql)
                        .and_then(|mut st| st.execute([key_param(url)]))
                        .map_err(|e| s.err(&format!("deleting from {table}"), e))?;
                }
                s.conn
                    .prepare_cached(
                        "INSERT OR REPLACE INTO soif_deletions (template, url, deleted, run_id)
                         VALUES (?1, ?2, ?3, ?4)",
                    )
                    .and_then(|mut st| {
                        st.execute(params![key_param(&tmpl), key_param(url), when, run_id])
                    })
                    .map_err(|e| s.err("recording the deletion", e))?;
                s.deletions_exist = true;
            }
            Ok(deleted)
        })
    }
}
