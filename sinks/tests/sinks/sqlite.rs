//! The sqlite sink on the seed examples, checked with SQL: contents, an `@DELETE`
//! envelope, an idempotent re-run, an interrupted run (dropped mid-batch, as a crash
//! would leave it) then re-run, and an RDM schema giving types and names.

use crate::common;

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use soif_codecs::Record;
use soif_pipeline::Sink;
use soif_sinks::sqlite::SqliteSink;
use soif_sinks::{build, RunContext, SinkConfig};
use soif_store::StoreOptions;
use std::path::Path;

fn load(db: &Path, records: &[Record], batch: usize) {
    let mut sink = SqliteSink::open(db, StoreOptions::default(), batch, &["seeds".into()]).unwrap();
    for r in records {
        sink.write(r).unwrap();
    }
    sink.finish().unwrap();
}

fn one<T: rusqlite::types::FromSql>(db: &Path, sql: &str) -> T {
    Connection::open(db)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Everything but run bookkeeping and timestamps, in a stable order.
fn dump(db: &Path) -> Vec<Vec<SqlValue>> {
    let conn = Connection::open(db).unwrap();
    let mut out = Vec::new();
    let mut queries = vec![
        "SELECT template, table_name FROM soif_tables ORDER BY table_name".to_string(),
        "SELECT * FROM soif_columns ORDER BY table_name, position".to_string(),
        "SELECT template, url FROM soif_deletions ORDER BY template, url".to_string(),
    ];
    let tables: Vec<String> = conn
        .prepare("SELECT table_name FROM soif_tables ORDER BY table_name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for t in tables {
        queries.push(format!("SELECT * FROM \"{t}\" ORDER BY url"));
    }
    for q in queries {
        let mut st = conn.prepare(&q).unwrap();
        let n = st.column_count();
        // When each row last changed and was created (layouts 2, 3) are times of runs,
        // not content:
        // two runs a second apart must still compare equal.
        let keep: Vec<usize> = (0..n)
            .filter(|&i| {
                st.column_name(i)
                    .is_ok_and(|c| c != "soif_datestamp" && c != "soif_created")
            })
            .collect();
        let rows = st
            .query_map([], |r| {
                keep.iter().map(|&i| r.get::<_, SqlValue>(i)).collect()
            })
            .unwrap();
        out.push(vec![SqlValue::Text(q.clone())]);
        out.extend(rows.map(Result::unwrap));
    }
    out
}

#[test]
fn seed_records_as_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("seeds.db");
    load(&db, &common::all_seed_records(), 2);
    let ssl = "http://home.netscape.com/eng/ssl3/ssl-toc.html";
    let q = |sql: &str| -> String { one(&db, sql) };
    assert_eq!(
        q(&format!(
            "SELECT \"Author-3\" FROM DOCUMENT WHERE url = '{ssl}'"
        )),
        "Paul C. Kocher"
    );
    assert_eq!(one::<i64>(&db, "SELECT count(*) FROM DOCUMENT"), 3);
    assert_eq!(q("SELECT \"CREATOR-2\" FROM \"Dublin-Core-1\""), "J. Kunze");
    assert_eq!(q("SELECT \"Embed<1>-Type\" FROM FILE"), "PostScript");
    // Attribute order is recoverable from soif_columns.
    assert_eq!(
        q("SELECT group_concat(column_name, ',') FROM
           (SELECT column_name FROM soif_columns WHERE table_name = 'DOCUMENT' ORDER BY position)"),
        "Title,Content-Type,Content-Length,Author-1,Author-2,Author-3,Abstract,Last-Modified,Thumbnail"
    );
    assert_eq!(
        q("SELECT table_name FROM soif_tables WHERE template = 'FILE'"),
        "FILE"
    );
    // The run is on record, finished, with its counts.
    assert_eq!(q("SELECT status FROM soif_runs"), "ok");
    assert_eq!(q("SELECT inputs FROM soif_runs"), "[\"seeds\"]");
    assert_eq!(one::<i64>(&db, "SELECT upserted FROM soif_runs"), 5);
    assert!(one::<Option<String>>(&db, "SELECT finished FROM soif_runs").is_some());
}

#[test]
fn delete_envelope_removes_rows_and_is_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db");
    load(&db, &common::all_seed_records(), 100);
    // Harvest manual: the collector envelope, here with one deletion.
    let delete = common::decode(
        b"@DELETE {\n@FILE { ftp://ecrc.de/pub/ECRC_tech_reports/reports/ECRC-93-10.ps.Z\n}\n}\n\
          @REFRESH {\n}\n\
          @UPDATE {\n@FILE { ftp://cml.rice.edu/pub/reports/9404.ps.Z\nType{10}:\tCompressed\n}\n}\n",
    );
    assert_eq!(delete.len(), 2);
    load(&db, &delete, 100);
    assert_eq!(one::<i64>(&db, "SELECT count(*) FROM FILE"), 1);
    assert_eq!(
        one::<String>(&db, "SELECT url FROM FILE"),
        "ftp://cml.rice.edu/pub/reports/9404.ps.Z"
    );
    assert_eq!(
        one::<String>(&db, "SELECT template || ' ' || url FROM soif_deletions"),
        "FILE ftp://ecrc.de/pub/ECRC_tech_reports/reports/ECRC-93-10.ps.Z"
    );
    assert_eq!(
        one::<i64>(&db, "SELECT deleted FROM soif_runs WHERE id = 2"),
        1
    );
    // Upserting it again takes it out of soif_deletions.
    load(&db, &[common::harvest_file()], 100);
    assert_eq!(one::<i64>(&db, "SELECT count(*) FROM soif_deletions"), 0);
    assert_eq!(one::<i64>(&db, "SELECT count(*) FROM FILE"), 2);
}

#[test]
fn rerun_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("i.db");
    let records = common::all_seed_records();
    load(&db, &records, 3);
    let first = dump(&db);
    load(&db, &records, 1);
    assert_eq!(dump(&db), first);
    assert_eq!(
        one::<i64>(&db, "SELECT count(*) FROM soif_runs WHERE status = 'ok'"),
        2
    );
}

/// A run that stops mid-batch (the sink dropped without `finish`, as when the run fails;
/// a crash leaves the same uncommitted transaction) keeps whole batches only; re-running
/// converges. The kill -9 case is in the root `tests/cli/sqlite.rs`.
#[test]
fn interrupted_run_is_consistent_and_rerun_converges() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.db");
    let records = common::all_seed_records();
    load(&clean, &records, 2);

    let db = dir.path().join("crash.db");
    {
        let mut sink = SqliteSink::open(&db, StoreOptions::default(), 2, &[]).unwrap();
        for r in &records[..3] {
            sink.write(r).unwrap();
        }
        // Dropped here: the third record's batch is not committed.
    }
    assert_eq!(one::<i64>(&db, "SELECT count(*) FROM DOCUMENT"), 2);
    assert_eq!(one::<String>(&db, "SELECT status FROM soif_runs"), "failed");
    assert_eq!(one::<i64>(&db, "SELECT upserted FROM soif_runs"), 2);
    load(&db, &records, 2);
    assert_eq!(dump(&db), dump(&clean));
}

#[test]
fn schema_gives_types_and_names_through_build() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.soif");
    std::fs::write(
        &schema,
        "@SCHEMA { -\nLast-Modified{29}:\tThu, 16 May 1996 00:00:00 GMT\nSchema-Name{8}:\tDOCUMENT\n\
         SOIF-Attribute-1{5}:\tTitle\nTable-Name-1{4}:\tdocs\nColumn-Name-1{5}:\ttitle\n\
         SOIF-Attribute-2{14}:\tContent-Length\nData-Type-2{3}:\tint\nColumn-Name-2{4}:\tsize\n}\n",
    )
    .unwrap();
    let db = dir.path().join("s.db");
    let opts = SinkConfig::Sqlite(soif_sinks::sqlite::Config {
        output: Some(db.display().to_string()),
        schema: Some(schema),
        ..Default::default()
    });
    let mut sink = build(&opts, &RunContext::default()).unwrap();
    for r in common::documents() {
        sink.write(&r).unwrap();
    }
    sink.finish().unwrap();
    drop(sink);
    assert_eq!(
        one::<i64>(
            &db,
            "SELECT sum(size) FROM docs WHERE typeof(size) = 'integer'"
        ),
        33262 + 25940 + 5870
    );
    assert_eq!(
        one::<String>(
            &db,
            "SELECT title FROM docs WHERE url = 'http://home.netscape.com:80/'"
        ),
        "Welcome to Netscape"
    );
    assert_eq!(
        one::<String>(
            &db,
            "SELECT data_type FROM soif_columns WHERE column_name = 'size'"
        ),
        "int"
    );
}

#[test]
fn build_needs_a_path() {
    let opts = SinkConfig::Sqlite(soif_sinks::sqlite::Config::default());
    let e = build(&opts, &RunContext::default()).err().unwrap();
    assert!(e.is_config(), "{e}");
}

#[test]
fn refresh_envelope_merges_into_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    load(&db, &[common::harvest_file()], 100);
    let refresh = common::decode(
        b"@DELETE {\n}\n@REFRESH {\n\
          @FILE { ftp://ecrc.de/pub/ECRC_tech_reports/reports/ECRC-93-10.ps.Z\n\
          Time-to-Live{7}:\t1234567\n}\n}\n@UPDATE {\n}\n",
    );
    assert_eq!(refresh.len(), 1);
    load(&db, &refresh, 100);
    assert_eq!(
        one::<String>(&db, "SELECT \"Time-to-Live\" FROM FILE"),
        "1234567"
    );
    // The attributes the refresh did not carry are still there.
    assert_eq!(
        one::<String>(&db, "SELECT \"Embed<1>-Type\" FROM FILE"),
        "PostScript"
    );
    assert_eq!(
        one::<String>(&db, "SELECT MD5 FROM FILE"),
        "43193942d4d53f5a8e4a7b4bcff7a415"
    );
}
