//! Writing: one submission, upserts or deletions, applied in one transaction.

use super::handle::{sql_err, store_err, Catalog};
use crate::error::RequestError;
use soif_codecs::{Action, Record};
use soif_store::{facets, fts, SqliteStore, StoreError};

/// Which kind of submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submission {
    /// `rd-response`: each RD replaces its row (an RD inside `@DELETE { }` deletes).
    Upsert,
    /// `rd-response-deleted`: each RD's row is deleted and the deletion remembered.
    Delete,
}

/// What a submission did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubmitCounts {
    pub upserted: u64,
    pub deleted: u64,
}

impl Catalog {
    /// Applies one submission in one transaction. `next` yields the RDs as the body is
    /// decoded; `None` means the body ended normally, an error aborts (and nothing of
    /// this submission is written).
    pub fn submit(
        &self,
        kind: Submission,
        next: &mut dyn FnMut() -> Option<Result<Record, RequestError>>,
    ) -> Result<SubmitCounts, RequestError> {
        let mut writer = self.writer()?;
        writer.begin().map_err(store_err)?;
        match self.submit_in_tx(&mut writer, kind, next) {
            Ok(counts) => {
                writer.commit().map_err(store_err)?;
                Ok(counts)
            }
            Err(e) => {
                let _ = writer.rollback();
                Err(e)
            }
        }
    }

    pub(crate) fn submit_in_tx(
        &self,
        writer: &mut SqliteStore,
        kind: Submission,
        next: &mut dyn FnMut() -> Option<Result<Record, RequestError>>,
    ) -> Result<SubmitCounts, RequestError> {
        let mut counts = SubmitCounts::default();
        let mut n = 0u64;
        while let Some(item) = next() {
            let record = item?;
            n += 1;
            let at = || format!("RD {n} ({})", record.url_str());
            let delete = kind == Submission::Delete || record.action == Some(Action::Delete);
            if delete {
                writer
                    .delete(Some(&record.template), &record.url)
                    .map_err(|e| match e {
                        StoreError::Rejected(m) => {
                            RequestError::Malformed(format!("{}: {m}", at()))
                        }
                        other => store_err(other),
                    })?;
                fts::remove(writer.connection(), &record.template, &record.url)
                    .map_err(sql_err(&self.path, "updating the keyword index"))?;
                facets::remove(writer.connection(), &record.template, &record.url)
                    .map_err(sql_err(&self.path, "updating the facet tables"))?;
                counts.deleted += 1;
            } else {
                writer.upsert(&record).map_err(|e| {
                    if e.is_record_error() {
                        RequestError::Malformed(format!("{}: {e}", at()))
                    } else {
                        store_err(e)
                    }
                })?;
                let conn = writer.connection();
                fts::remove(conn, &record.template, &record.url)
                    .and_then(|_| fts::insert(conn, &record))
                    .map_err(sql_err(&self.path, "updating the keyword index"))?;
                facets::remove(conn, &record.template, &record.url)
                    .and_then(|_| facets::insert(conn, &record))
                    .map_err(sql_err(&self.path, "updating the facet tables"))?;
                counts.upserted += 1;
            }
        }
        Ok(counts)
    }
}
