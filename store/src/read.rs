//! Reading records back: one record by template and URL, and every row of a table in
//! URL order, a page at a time ([`SqliteStore::scan_page`]), so that a reader holds one
//! page whatever the table's size.

use crate::store::{SqliteStore, StoreError};
use crate::tables::key_param;
use rusqlite::OptionalExtension;
use soif_codecs::Record;

impl SqliteStore {
    /// The stored record for `url` in `template`'s table (see
    /// [`TableInfo::record_from_row`] for how values come back).
    pub fn get(&self, template: &[u8], url: &[u8]) -> Result<Option<Record>, StoreError> {
        let Some(t) = self.tables.get(template) else {
            return Ok(None);
        };
        let sql = format!("{} WHERE \"url\" = ?1", t.info.select_sql());
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut st| {
                st.query_row([key_param(url)], |row| t.info.record_from_row(row))
                    .optional()
            })
            .map_err(|e| self.err(&format!("reading {}", t.info.table), e))
    }
}
