//! One catalog: a SQLite database in the layout of the `sqlite` sink
//! (`docs/sqlite-layout.md`), read for `rd-request` / `rd-request-deleted` and written for
//! submissions.
//!
//! Everything here is blocking (rusqlite); the HTTP handlers call it on blocking threads.
//!
//! # Reading
//!
//! [`Catalog::query`] produces the result set of a request record by record, without
//! holding it: a scan of every template's table for the gatherer scopes `all` and `since
//! DATE`, a full-text search for the keyword language, or `soif_deletions` for
//! `rd-request-deleted`. Each candidate then goes through the view: `View-Order` sorts with
//! the `order` transform (which spills to disk beyond [`ORDER_BUDGET`]), `View-Hits` skips
//! and counts (and ends the scan early when there is no order), `View-Attributes` keeps the
//! named attributes (`URL` keeps the URL, as the `select` transform does). A read runs in
//! one SQLite read transaction, so it sees one consistent snapshot even while a loader or
//! a submission writes.
//!
//! `since DATE` compares the latest of `Last-Modification-Time`, `Last-Modified` and
//! `Update-Time` (Unix seconds or HTTP dates, as Harvest and RDM wrote them) with DATE; a
//! record is returned when it was modified at or after DATE. Records without a readable
//! date are left out. For `rd-request-deleted` the date is the time of the deletion.
//!
//! # The keyword language and its index
//!
//! The note's "toy sample-keyword-ql" is served by SQLite FTS5: the scope is a list of
//! words, every one of which must occur in the record (its URL or any value); `OR` between
//! two words accepts either. Each word is matched as an FTS5 string (prefix-free, case-
//! and diacritic-insensitive `unicode61` tokens), so no input is FTS5 syntax. Hits come in
//! the order of FTS5's `bm25` rank, best first, each with a `Score` attribute: 1000 for the
//! best hit and the others in proportion to their rank (so `View-Order: -Score` is the
//! default order, and `Score` can be selected and sorted like any attribute).
//!
//! The index lives in the same database, in two tables the server owns (the `soif_` prefix
//! keeps them apart from record tables): `soif_fts_keys(id INTEGER PRIMARY KEY, template,
//! url, UNIQUE(template, url))` and the FTS5 table `soif_fts(body)` whose rowid is
//! `soif_fts_keys.id`. Submissions update it in the transaction that writes the records.
//! Loaders (`soif convert --to sqlite`) do not know about it; every loader run is recorded
//! in `soif_runs`, so the server keeps a summary of `soif_runs` as of its last full index
//! build in `soif_meta` (key `fts_runs`) and rebuilds the index before a keyword query when
//! the summary has changed — once the loader's run has finished (see
//! [`Catalog::ensure_index`]), in transactions of [`INDEX_CHUNK`](soif_store::fts::INDEX_CHUNK) records so that loaders
//! are not locked out. Runs loaded while the server was down are thus picked up at start
//! (in the background) or by the first keyword query.
//!
//! # Writing
//!
//! [`Catalog::submit`] applies one `rd-response` (upserts) or `rd-response-deleted`
//! (deletions) through [`SqliteStore`] exactly as the `sqlite` sink does — a record
//! replaces its row, a deletion is remembered in `soif_deletions` with its time — in one
//! transaction: a submission is applied whole or not at all.
//!
//! Its parts: `handle` (the connections, opening, the overview), `query` (reading),
//! `index` (the keyword index), `submit` (writing).

mod handle;
mod index;
mod query;
mod submit;

pub use handle::{Catalog, CatalogOptions, Overview, READERS};
pub use index::LOADER_IDLE;
pub use query::{keyword_query, Flow, Query, Scope, ORDER_BUDGET};
pub use submit::{Submission, SubmitCounts};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::RequestError;
    use soif_codecs::rdm::View;
    use soif_codecs::rdm::{ViewAttributes, ViewHits, ViewOrder};
    use soif_codecs::{Action, Record};
    use soif_store::fts::INDEX_CHUNK;

    fn catalog() -> (tempfile::TempDir, Catalog) {
        let dir = tempfile::tempdir().unwrap();
        let c = Catalog::open("test", &dir.path().join("c.db")).unwrap();
        (dir, c)
    }

    fn submit(c: &Catalog, kind: Submission, records: Vec<Record>) -> SubmitCounts {
        let mut it = records.into_iter();
        c.submit(kind, &mut || it.next().map(Ok)).unwrap()
    }

    fn run(c: &Catalog, q: &Query) -> Vec<Record> {
        let mut out = Vec::new();
        c.query(q, &mut |r| {
            out.push(r);
            Ok(Flow::Continue)
        })
        .unwrap();
        out
    }

    fn docs() -> Vec<Record> {
        vec![
            Record::new("DOCUMENT", "http://www.netscape.com:80/")
                .with("Title", "Welcome to Netscape!")
                .with("Last-Modified", "Thu, 16 May 1996 11:45:39 GMT"),
            Record::new("DOCUMENT", "http://harvest.cs.colorado.edu/")
                .with("Title", "Harvest: netscape netscape gatherer")
                .with("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
            Record::new("FILE", "http://x/y.txt").with("Last-Modification-Time", "805226393"),
        ]
    }

    #[test]
    fn keyword_queries_quote_every_word() {
        assert_eq!(keyword_query("netscape", 32).unwrap(), "\"netscape\"");
        assert_eq!(keyword_query(" a  OR b ", 32).unwrap(), "\"a\" OR \"b\"");
        assert_eq!(keyword_query("OR a", 32).unwrap(), "\"OR\" \"a\"");
        assert_eq!(
            keyword_query("x\"y NEAR(", 32).unwrap(),
            "\"x\"\"y\" \"NEAR(\""
        );
        assert!(keyword_query("  ", 32).is_err());
    }

    #[test]
    fn gatherer_scopes_views_and_keywords() {
        let (_d, c) = catalog();
        assert_eq!(submit(&c, Submission::Upsert, docs()).upserted, 3);
        let all = Query {
            scope: Scope::All,
            deleted: false,
            view: View::default(),
            ..Query::default()
        };
        assert_eq!(run(&c, &all).len(), 3);
        // since 1995-01-01: the Netscape page (1996) and the FILE (805226393 = 1995-07-06).
        let since = Query {
            scope: Scope::Since(788918400),
            ..all.clone()
        };
        let urls: Vec<String> = run(&c, &since).iter().map(|r| r.url_str().into()).collect();
        assert_eq!(urls, ["http://www.netscape.com:80/", "http://x/y.txt"]);
        // View: title order, first hit only, URL and Title.
        let view = Query {
            view: View {
                attributes: Some(ViewAttributes::parse("URL,Title").unwrap()),
                order: Some(ViewOrder::parse("+Title").unwrap()),
                hits: Some(ViewHits::First(1)),
            },
            ..all.clone()
        };
        let got = run(&c, &view);
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].get_str("Title"),
            Some("Harvest: netscape netscape gatherer")
        );
        assert!(got[0].get("Last-Modified").is_none());
        // Keywords: both documents mention netscape; the denser one ranks first.
        let kw = Query {
            scope: Scope::Keywords(keyword_query("netscape", 32).unwrap()),
            ..all.clone()
        };
        let hits = run(&c, &kw);
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].get_str("Score"), Some("1000"));
        let second: i64 = hits[1].get_str("Score").unwrap().parse().unwrap();
        assert!(second <= 1000);
    }

    #[test]
    fn deletions_are_remembered_and_unindexed() {
        let (_d, c) = catalog();
        submit(&c, Submission::Upsert, docs());
        let gone = vec![Record::new("DOCUMENT", "http://www.netscape.com:80/")];
        assert_eq!(submit(&c, Submission::Delete, gone).deleted, 1);
        let deleted = Query {
            scope: Scope::All,
            deleted: true,
            view: View::default(),
            ..Query::default()
        };
        let d = run(&c, &deleted);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].action, Some(Action::Delete));
        assert!(d[0].get_str("Last-Modified").unwrap().ends_with("GMT"));
        let kw = Query {
            scope: Scope::Keywords(keyword_query("welcome", 32).unwrap()),
            deleted: false,
            view: View::default(),
            ..Query::default()
        };
        assert!(run(&c, &kw).is_empty());
    }

    #[test]
    fn a_failed_submission_writes_nothing() {
        let (_d, c) = catalog();
        let mut items = vec![
            Ok(Record::new("DOCUMENT", "http://a/")),
            Err(RequestError::Malformed("bad".into())),
        ]
        .into_iter();
        assert!(c.submit(Submission::Upsert, &mut || items.next()).is_err());
        let mut items = vec![
            Ok(Record::new("DOCUMENT", "http://a/")),
            Ok(Record::new("DOCUMENT", "-")),
        ]
        .into_iter();
        let e = c
            .submit(Submission::Upsert, &mut || items.next())
            .unwrap_err();
        assert!(e.to_string().contains("RD 2"), "{e}");
        let all = Query {
            scope: Scope::All,
            deleted: false,
            view: View::default(),
            ..Query::default()
        };
        assert!(run(&c, &all).is_empty());
    }

    #[test]
    fn the_index_waits_for_a_running_loader_and_is_rebuilt_in_chunks() {
        let (d, c) = catalog();
        let path = d.path().join("c.db");
        let mut sink = soif_store::Loader::open(&path, Default::default(), 500, &[]).unwrap();
        // More than one rebuild chunk, committed in batches while the run is `running`.
        for i in 0..INDEX_CHUNK + 700 {
            sink.write(
                &Record::new("FILE", format!("http://loaded/{i:05}")).with("Title", "okapi"),
            )
            .unwrap();
        }
        let kw = Query {
            scope: Scope::Keywords(keyword_query("okapi", 32).unwrap()),
            deleted: false,
            view: View::default(),
            ..Query::default()
        };
        // While the loader runs, the index is left as it is (and nothing waits for it).
        assert!(run(&c, &kw).is_empty());
        sink.finish().unwrap();
        let hits = run(&c, &kw);
        assert_eq!(hits.len(), INDEX_CHUNK + 700);
        let mut urls: Vec<String> = hits.iter().map(|r| r.url_str().into_owned()).collect();
        urls.sort();
        urls.dedup();
        assert_eq!(urls.len(), INDEX_CHUNK + 700, "each record indexed once");
    }

    #[test]
    fn loader_writes_are_indexed_before_a_keyword_query() {
        let (d, c) = catalog();
        // A loader (the sqlite sink) writes behind the server's back.
        let path = d.path().join("c.db");
        let mut sink = soif_store::Loader::open(&path, Default::default(), 10, &[]).unwrap();
        sink.write(&Record::new("FILE", "http://loaded/").with("Title", "zebra"))
            .unwrap();
        sink.finish().unwrap();
        let kw = Query {
            scope: Scope::Keywords(keyword_query("zebra", 32).unwrap()),
            deleted: false,
            view: View::default(),
            ..Query::default()
        };
        assert_eq!(run(&c, &kw).len(), 1);
    }
}
