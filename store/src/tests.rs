//! The store's tests (moved with it from the `sqlite` sink).
use super::*;
use crate::load::record_bytes;
use crate::tables::{ident_text, unique_name, MAX_COLUMNS};
use crate::write::MAX_MERGE_SQL;
use bytes::Bytes;
use rusqlite::Connection;
use soif_codecs::{Action, Attribute, Record, Value};
use std::collections::HashSet;
use std::time::Duration;

fn mem() -> SqliteStore {
    SqliteStore::open_in_memory(StoreOptions::default()).unwrap()
}

fn count(store: &SqliteStore, sql: &str) -> i64 {
    store.connection().query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn quoting_and_names() {
    assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    let used = HashSet::from(["url".to_string(), "title".to_string(), "title_2".into()]);
    assert_eq!(unique_name("Title", &used), "Title_3");
    assert_eq!(unique_name("URL", &used), "URL_2");
    assert_eq!(unique_name("Type", &used), "Type");
    assert_eq!(ident_text(b"a\0b"), "a_b");
    assert_eq!(sql_type_for(Some("varchar")), "TEXT");
    assert_eq!(sql_type_for(Some("INT")), "INTEGER");
    assert_eq!(sql_type_for(Some("decimal(10,2)")), "NUMERIC");
    assert_eq!(sql_type_for(Some("blob")), "BLOB");
    assert_eq!(sql_type_for(None), "TEXT");
}

#[test]
fn columns_added_as_attributes_appear_and_rows_replaced() {
    let mut s = mem();
    s.upsert(&Record::new("FILE", "u1").with("Title", "a"))
        .unwrap();
    s.upsert(
        &Record::new("FILE", "u2")
            .with("Type", "HTML")
            .with("Title", "b"),
    )
    .unwrap();
    // u1 again without Title: the row becomes exactly the record.
    s.upsert(&Record::new("FILE", "u1").with("Type", "Text"))
        .unwrap();
    let t = s.table(b"FILE").unwrap();
    let cols: Vec<_> = t.columns.iter().map(|c| c.column.as_str()).collect();
    assert_eq!(cols, ["Title", "Type"]);
    let back = s.get(b"FILE", b"u1").unwrap().unwrap();
    assert_eq!(back.get_str("Type"), Some("Text"));
    assert!(back.get("Title").is_none());
    assert_eq!(count(&s, "SELECT count(*) FROM FILE"), 2);
}

#[test]
fn refresh_merges_update_replaces() {
    let mut s = mem();
    s.upsert(
        &Record::new("FILE", "u")
            .with("Title", "t")
            .with("Time-to-Live", "1"),
    )
    .unwrap();
    let mut refresh = Record::new("FILE", "u").with("Time-to-Live", "2");
    refresh.action = Some(Action::Refresh);
    s.upsert(&refresh).unwrap();
    let back = s.get(b"FILE", b"u").unwrap().unwrap();
    assert_eq!(
        back.get_str("Title"),
        Some("t"),
        "refresh keeps other columns"
    );
    assert_eq!(back.get_str("Time-to-Live"), Some("2"));
    // A refresh of an unknown URL inserts it.
    refresh.url = "v".into();
    s.upsert(&refresh).unwrap();
    assert_eq!(count(&s, "SELECT count(*) FROM FILE"), 2);
    let mut update = Record::new("FILE", "u").with("Time-to-Live", "3");
    update.action = Some(Action::Update);
    s.upsert(&update).unwrap();
    let back = s.get(b"FILE", b"u").unwrap().unwrap();
    assert!(back.get("Title").is_none(), "update replaces the row");
}

#[test]
fn hostile_names_and_case_collisions() {
    let mut s = mem();
    let r = Record::new("soif_runs", "u")
        .with("url", "x")
        .with("Title", "1")
        .with("TITLE", "2")
        .with("a\"; DROP TABLE x; --", "3");
    s.upsert(&r).unwrap();
    let t = s.table(b"soif_runs").unwrap().clone();
    assert_eq!(t.table, "t_soif_runs");
    let cols: Vec<_> = t.columns.iter().map(|c| c.column.as_str()).collect();
    assert_eq!(cols, ["url_2", "Title", "TITLE_2", "a\"; DROP TABLE x; --"]);
    let back = s.get(b"soif_runs", b"u").unwrap().unwrap();
    assert_eq!(back.attributes, r.attributes);
    // Templates differing only in case get their own tables.
    s.upsert(&Record::new("file", "u")).unwrap();
    s.upsert(&Record::new("FILE", "u")).unwrap();
    assert_eq!(s.table(b"FILE").unwrap().table, "FILE_2");
}

#[test]
fn blobs_lists_and_repeats() {
    let mut s = mem();
    let r = Record::new("FILE", "u")
        .with("Bin", Value::from(vec![0xff, 0x00, 0x41]))
        .with("Author", Value::List(vec!["A".into(), "B".into()]))
        .with("K", "1")
        .with("K", "2");
    s.upsert(&r).unwrap();
    let (bin, typ): (Vec<u8>, String) = s
        .connection()
        .query_row("SELECT Bin, typeof(Bin) FROM FILE", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(
        (bin.as_slice(), typ.as_str()),
        (&[0xff, 0x00, 0x41][..], "blob")
    );
    let (a, k): (String, String) = s
        .connection()
        .query_row("SELECT Author, K FROM FILE", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(a, r#"["A","B"]"#);
    assert_eq!(k, r#"["1","2"]"#);
}

#[test]
fn collapsed_values_come_back_as_lists_and_parts() {
    let mut s = mem();
    let r = Record::new("FILE", "u")
        .with("Title", "[not json")
        .with(
            "Author",
            Value::List(vec!["Alan O. Freier".into(), Value::from(vec![0xe9u8])]),
        )
        .with(
            "Embed",
            Value::List(vec![Value::Object(vec![
                Attribute::new("Type", "PostScript"),
                Attribute::new("File-Size", "428233"),
            ])]),
        );
    s.upsert(&r).unwrap();
    let t = s.table(b"FILE").unwrap();
    let json: Vec<bool> = t.columns.iter().map(|c| c.json).collect();
    assert_eq!(json, [false, true, true]);
    let back = s.get(b"FILE", b"u").unwrap().unwrap();
    assert_eq!(back.attributes, r.attributes);
    let flat: Vec<_> = back
        .flattened()
        .attributes
        .iter()
        .map(|a| a.name_str().into_owned())
        .collect();
    assert_eq!(
        flat,
        [
            "Title",
            "Author-1",
            "Author-2",
            "Embed<1>-Type",
            "Embed<1>-File-Size"
        ]
    );
    // The flag is in the database, for other readers.
    assert_eq!(
        count(
            &s,
            "SELECT sum(json) FROM soif_columns WHERE table_name = 'FILE'"
        ),
        2
    );
    s.reload().unwrap();
    assert_eq!(
        s.get(b"FILE", b"u").unwrap().unwrap().attributes,
        r.attributes
    );
}

#[test]
fn no_url_is_rejected() {
    let mut s = mem();
    let e = s.upsert(&Record::new("SCHEMA", "-")).unwrap_err();
    assert!(e.is_record_error());
    assert!(e.to_string().contains("no URL"), "{e}");
}

#[test]
fn delete_and_remember() {
    let mut s = mem();
    s.upsert(&Record::new("FILE", "u").with("T", "x")).unwrap();
    assert_eq!(s.delete(Some(b"FILE"), b"u").unwrap(), 1);
    assert_eq!(s.delete(Some(b"FILE"), b"u").unwrap(), 0);
    assert_eq!(count(&s, "SELECT count(*) FROM soif_deletions"), 1);
    s.upsert(&Record::new("FILE", "u").with("T", "y")).unwrap();
    assert_eq!(count(&s, "SELECT count(*) FROM soif_deletions"), 0);
    assert_eq!(s.delete(None, b"u").unwrap(), 1);
    assert!(s.delete(Some(b"FILE"), b"-").unwrap_err().is_record_error());
}

#[test]
fn schema_types_and_names() {
    let schema = SchemaColumns::from_record(
        &Record::new("SCHEMA", "-")
            .with("Schema-Name", "FILE")
            .with("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT")
            .with("SOIF-Attribute-1", "File-Size")
            .with("Data-Type-1", "int")
            .with("Column-Name-1", "size")
            .with("Table-Name-1", "files"),
    )
    .unwrap();
    let mut s = SqliteStore::open_in_memory(StoreOptions {
        schema: Some(schema),
        charset: Charset::Utf8,
        ..Default::default()
    })
    .unwrap();
    s.upsert(&Record::new("FILE", "u").with("File-Size", "164373"))
        .unwrap();
    let (v, t): (i64, String) = s
        .connection()
        .query_row("SELECT size, typeof(size) FROM files", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((v, t.as_str()), (164373, "integer"));
    let back = s.get(b"FILE", b"u").unwrap().unwrap();
    assert_eq!(back.get_str("File-Size"), Some("164373"));
}

#[test]
fn two_stores_on_one_database_see_each_others_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let mut a = SqliteStore::open(&path).unwrap();
    let mut b = SqliteStore::open(&path).unwrap();
    a.upsert(&Record::new("FILE", "u1").with("Title", "a"))
        .unwrap();
    // b has never seen FILE or Title: it must not try to create them again.
    b.upsert(
        &Record::new("FILE", "u2")
            .with("Title", "b")
            .with("Type", "T"),
    )
    .unwrap();
    a.upsert(&Record::new("FILE", "u3").with("Type", "c"))
        .unwrap();
    assert_eq!(a.table(b"FILE").unwrap().columns.len(), 2);
    assert_eq!(
        count(&a, "SELECT count(*) FROM FILE WHERE Type IS NOT NULL"),
        2
    );
    // A reader refreshes before listing.
    let mut c = SqliteStore::open(&path).unwrap();
    b.upsert(&Record::new("DOCUMENT", "d")).unwrap();
    assert!(c.table(b"DOCUMENT").is_none());
    assert!(c.refresh().unwrap());
    assert!(c.table(b"DOCUMENT").is_some());
    assert!(!c.refresh().unwrap());
}

#[test]
fn new_databases_get_16k_pages_existing_ones_keep_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let pragma = |s: &SqliteStore, p: &str| -> i64 {
        s.connection()
            .query_row(&format!("PRAGMA {p}"), [], |r| r.get(0))
            .unwrap()
    };
    let s = SqliteStore::open(&dir.path().join("new.db")).unwrap();
    assert_eq!(pragma(&s, "page_size"), 16384);
    assert_eq!(pragma(&s, "wal_autocheckpoint"), 1024, "16 MiB of WAL");
    // A database made elsewhere with 4 KiB pages stays as it is.
    let old = dir.path().join("old.db");
    Connection::open(&old)
        .unwrap()
        .execute_batch("PRAGMA page_size = 4096; CREATE TABLE other (a)")
        .unwrap();
    let mut s = SqliteStore::open(&old).unwrap();
    assert_eq!(pragma(&s, "page_size"), 4096);
    assert_eq!(pragma(&s, "wal_autocheckpoint"), 4096);
    s.upsert(&Record::new("FILE", "u").with("T", "x")).unwrap();
    assert_eq!(count(&s, "SELECT count(*) FROM other"), 0);
}

#[test]
fn a_batch_is_committed_at_its_row_count_or_its_size() {
    let mut sink = Loader::new(mem(), 3, &[]).unwrap();
    let small = Record::new("FILE", "u1").with("T", "x");
    sink.write(&small).unwrap();
    sink.write(&small).unwrap();
    assert!(sink.store().in_transaction(), "2 of 3 rows: still open");
    sink.write(&small).unwrap();
    assert!(!sink.store().in_transaction(), "3 rows: committed");
    // One record of MAX_BATCH_BYTES ends its transaction however few rows it has.
    let mut big = Record::new("FILE", "u2").with("T", "x");
    big.raw = Some(Bytes::from(vec![b' '; MAX_BATCH_BYTES]));
    sink.write(&big).unwrap();
    assert!(!sink.store().in_transaction(), "the size committed it");
    sink.write(&small).unwrap();
    assert!(sink.store().in_transaction());
    // Without its bytes as read, a record is measured by its values.
    let mut parsed = Record::new("FILE", "u3");
    parsed.push("Full-Text", Bytes::from(vec![b'y'; MAX_BATCH_BYTES]));
    assert!(record_bytes(&parsed) > MAX_BATCH_BYTES);
    sink.write(&parsed).unwrap();
    assert!(!sink.store().in_transaction());
    sink.finish().unwrap();
    assert_eq!(count(sink.store(), "SELECT count(*) FROM FILE"), 3);
}

/// Space reserved ahead of a bulk load's file is given back at its end: the file
/// takes no more disk than its size (where `fallocate` works, it took 64 MiB more
/// while loading).
#[cfg(target_os = "linux")]
#[test]
fn a_bulk_load_gives_back_the_space_it_reserved() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    let mut sink = Loader::open(&path, StoreOptions::default(), 100, &[]).unwrap();
    for i in 0..300 {
        sink.write(&Record::new("FILE", format!("u{i}")).with("T", "x".repeat(2000)))
            .unwrap();
    }
    let during = std::fs::metadata(&path).unwrap();
    eprintln!(
        "while loading: {} bytes, {} on disk",
        during.len(),
        during.blocks() * 512
    );
    sink.finish().unwrap();
    let after = std::fs::metadata(&path).unwrap();
    assert!(after.len() > 600_000, "{}", after.len());
    assert!(
        after.blocks() * 512 <= after.len() + (64 << 10),
        "{} bytes on disk for a file of {}",
        after.blocks() * 512,
        after.len()
    );
    assert_eq!(count(sink.store(), "SELECT count(*) FROM FILE"), 300);
    assert_eq!(
        sink.store()
            .connection()
            .query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
            .unwrap(),
        "ok"
    );
}

/// The writeback helper's descriptor of the database file stays open until the sink
/// is dropped (after its connection): closing it while SQLite holds the write lock
/// would drop that lock (see `Writeback::finish`).
#[cfg(target_os = "linux")]
#[test]
fn the_writeback_descriptor_outlives_the_last_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    let descriptors = || {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| *target == path)
            .count()
    };
    let mut sink = Loader::open(&path, StoreOptions::default(), 100, &[]).unwrap();
    sink.write(&Record::new("FILE", "u").with("T", "x"))
        .unwrap();
    let loading = descriptors();
    assert!(loading >= 2, "SQLite's and the helper's: {loading}");
    sink.finish().unwrap();
    assert_eq!(descriptors(), loading, "none closed by finish");
    drop(sink);
    assert_eq!(descriptors(), 0);
}

#[test]
fn a_new_database_is_bulk_loaded_then_left_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let text = |s: &SqliteStore, sql: &str| -> String {
        s.connection().query_row(sql, [], |r| r.get(0)).unwrap()
    };
    let num = |s: &SqliteStore, sql: &str| -> i64 {
        s.connection().query_row(sql, [], |r| r.get(0)).unwrap()
    };
    let path = dir.path().join("new.db");
    let mut sink = Loader::open(&path, StoreOptions::default(), 2, &[]).unwrap();
    // While loading: a rollback journal, no syncs.
    assert_eq!(text(sink.store(), "PRAGMA journal_mode"), "truncate");
    assert_eq!(num(sink.store(), "PRAGMA synchronous"), 0);
    assert!(
        sink.writeback.is_some(),
        "committed pages are written out meanwhile"
    );
    for i in 0..5 {
        sink.write(&Record::new("FILE", format!("u{i}")).with("T", "x"))
            .unwrap();
    }
    sink.finish().unwrap();

    // Afterwards: durable, and in WAL mode like every other soif database.
    assert_eq!(text(sink.store(), "PRAGMA journal_mode"), "wal");
    assert_eq!(num(sink.store(), "PRAGMA synchronous"), 1);
    assert_eq!(num(sink.store(), "SELECT count(*) FROM FILE"), 5);
    assert_eq!(text(sink.store(), "SELECT status FROM soif_runs"), "ok");
    drop(sink);

    // An existing database (someone may be reading it) is written in WAL mode.
    let sink = Loader::open(&path, StoreOptions::default(), 2, &[]).unwrap();
    assert_eq!(text(sink.store(), "PRAGMA journal_mode"), "wal");
    assert_eq!(num(sink.store(), "PRAGMA synchronous"), 1);
    assert!(sink.writeback.is_none());
}

#[test]
fn a_database_being_bulk_loaded_can_be_opened_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    let mut sink = Loader::open(&path, StoreOptions::default(), 1000, &[]).unwrap();
    // The loader is mid-batch: its transaction holds the write lock.
    sink.write(&Record::new("FILE", "u0").with("T", "x"))
        .unwrap();
    assert!(sink.store().in_transaction());
    let opener = {
        let path = path.clone();
        std::thread::spawn(move || SqliteStore::open(&path).map(|s| s.path().to_string()))
    };
    // The other process (the server) waits for the batch, then opens the database in
    // the loader's journal mode instead of failing to switch it to WAL.
    std::thread::sleep(Duration::from_millis(300));
    sink.finish().unwrap();
    let opened = opener.join().unwrap();
    assert!(opened.is_ok(), "{opened:?}");
    let s = SqliteStore::open(&path).unwrap();
    assert_eq!(count(&s, "SELECT count(*) FROM FILE"), 1);
}

#[test]
fn merge_statements_follow_the_columns_present() {
    let mut s = mem();
    let refresh = |url: &'static str, attrs: &[(&str, &str)]| {
        let mut r = Record::new("FILE", url);
        for (n, v) in attrs {
            r.push(n, *v);
        }
        r.action = Some(Action::Refresh);
        r
    };
    s.upsert(
        &Record::new("FILE", "u")
            .with("A", "1")
            .with("B", "2")
            .with("C", "3"),
    )
    .unwrap();
    // Different column sets, each its own statement; a repeated set reuses one.
    for (attrs, want) in [
        (&[("B", "b")][..], ["1", "b", "3"]),
        (&[("A", "a"), ("C", "c")][..], ["a", "b", "c"]),
        (&[("B", "x"), ("B", "y")][..], ["a", r#"["x","y"]"#, "c"]),
        (&[("B", "z")][..], ["a", "z", "c"]),
    ] {
        s.upsert(&refresh("u", attrs)).unwrap();
        let got: (String, String, String) = s
            .connection()
            .query_row("SELECT A, B, C FROM FILE WHERE url = 'u'", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!([got.0, got.1, got.2], want.map(String::from));
    }
    // Only the URL: the row is left as it is.
    s.upsert(&refresh("u", &[])).unwrap();
    assert_eq!(
        s.get(b"FILE", b"u").unwrap().unwrap().get_str("A"),
        Some("a")
    );
    // More sets than the cache holds still write correctly.
    for i in 0..(MAX_MERGE_SQL + 5) {
        let mut r = refresh("v", &[("A", "1")]);
        r.push(&format!("N{i}"), "x");
        s.upsert(&r).unwrap();
    }
    let n = format!("N{}", MAX_MERGE_SQL + 4);
    assert_eq!(
        s.get(b"FILE", b"v").unwrap().unwrap().get_str(&n),
        Some("x")
    );
}

#[test]
fn too_many_columns_is_a_record_error() {
    let mut s = mem();
    let mut r = Record::new("FILE", "u");
    for i in 0..=MAX_COLUMNS {
        r.push(&format!("A{i}"), "x");
    }
    let e = s.upsert(&r).unwrap_err();
    assert!(e.is_record_error(), "{e}");
    // The store goes on, and nothing of the rejected record was added.
    s.upsert(&Record::new("FILE", "v").with("B", "y")).unwrap();
    assert_eq!(s.table(b"FILE").unwrap().columns.len(), 1);
}
