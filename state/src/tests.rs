//! The commit protocol at every crash point, on the library.

use super::*;
use crate::outputs::plan;
use soif_pipeline::checkpoint::Checkpoint;
use std::path::Path;

fn taken(path: &str) -> TakenFile {
    TakenFile {
        path: path.to_string(),
        size: 3,
        mtime_ns: 7,
        hash: "h".to_string(),
        reason: Reason::New,
        counts: Counts {
            records_in: 2,
            records_out: 2,
            rejected: 0,
        },
    }
}

/// Begins a run with one planned output, writes the output, stages.
fn staged_run(state: &Path, out: &Path) -> (StateStore, i64, outputs::PlannedOutput) {
    let mut store = StateStore::open(state).unwrap();
    store.recover().unwrap();
    let run = store.begin_run(&[], &[]).unwrap();
    let p = plan(out, &run.label);
    store
        .plan_outputs(run.id, std::slice::from_ref(&p))
        .unwrap();
    std::fs::write(&p.temp, "records").unwrap();
    let progress = Staged {
        files: vec![taken("/in/a.soif")],
        sources: vec![SourceProgress {
            key: "oai+http://h/oai".into(),
            checkpoint: Checkpoint::new("oai", "{\"responseDate\":\"x\"}"),
            counts: Counts::default(),
        }],
        outputs: vec![(p.temp.clone(), true)],
        ..Staged::default()
    };
    store.stage(run.id, &progress, RunStatus::Ok, "{}").unwrap();
    (store, run.id, p)
}

#[test]
fn killed_while_running_is_interrupted_and_its_temp_removed() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("s.db");
    let out = dir.path().join("r.jsonl");
    {
        let mut store = StateStore::open(&state).unwrap();
        let run = store.begin_run(&[], &[]).unwrap();
        let p = plan(&out, &run.label);
        store
            .plan_outputs(run.id, std::slice::from_ref(&p))
            .unwrap();
        std::fs::write(&p.temp, "half").unwrap();
        // Dropped without staging: as if killed.
    }
    let mut store = StateStore::open(&state).unwrap();
    let r = store.recover().unwrap();
    assert_eq!(r.interrupted, [1]);
    assert!(store.file("/in/a.soif").unwrap().is_none());
    assert_eq!(
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains("r.")
            })
            .count(),
        0
    );
    assert_eq!(store.runs(5).unwrap()[0].status, "interrupted");
}

#[test]
fn killed_after_staging_is_rolled_forward_before_or_after_the_rename() {
    for renamed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("s.db");
        let out = dir.path().join("r.jsonl");
        let (store, id, p) = staged_run(&state, &out);
        if renamed {
            std::fs::rename(&p.temp, &p.final_path).unwrap();
        }
        drop(store);
        let mut store = StateStore::open(&state).unwrap();
        let r = store.recover().unwrap();
        assert_eq!(r.completed, [id]);
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        assert_eq!(std::fs::read_to_string(&p.final_path).unwrap(), "records");
        assert!(!p.temp.exists());
        assert_eq!(store.file("/in/a.soif").unwrap().unwrap().records, Some(2));
        assert_eq!(store.checkpoints().unwrap()[0].1.kind, "oai");
        let runs = store.runs(5).unwrap();
        assert_eq!(runs[0].status, "ok");
        assert_eq!(
            runs[0].outputs,
            [p.final_path.to_string_lossy().into_owned()]
        );
        // Nothing left to recover.
        assert_eq!(store.recover().unwrap(), Recovery::default());
    }
}

#[test]
fn a_failed_run_records_nothing_taken() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("s.db");
    let mut store = StateStore::open(&state).unwrap();
    let run = store.begin_run(&[], &[]).unwrap();
    let p = plan(&dir.path().join("o.csv"), &run.label);
    store
        .plan_outputs(run.id, std::slice::from_ref(&p))
        .unwrap();
    std::fs::write(&p.temp, "x").unwrap();
    store.fail(run.id, "boom", 1, "{}").unwrap();
    assert!(!p.temp.exists());
    assert!(store.files(None).unwrap().is_empty());
    let row = &store.runs(1).unwrap()[0];
    assert_eq!(
        (row.status.as_str(), row.error.as_deref()),
        ("failed", Some("boom"))
    );
}

#[test]
fn touched_files_keep_their_reading_run_and_forget_works() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("s.db");
    let (mut store, _, _) = staged_run(&state, &dir.path().join("o"));
    store.complete(1).unwrap();
    let run = store.begin_run(&[], &[]).unwrap();
    let mut t = taken("/in/a.soif");
    t.reason = Reason::Touched;
    t.mtime_ns = 9;
    let progress = Staged {
        files: vec![t, taken("/in/sub/b.soif")],
        ..Staged::default()
    };
    store.stage(run.id, &progress, RunStatus::Ok, "{}").unwrap();
    store.complete(run.id).unwrap();
    let a = store.file("/in/a.soif").unwrap().unwrap();
    assert_eq!((a.mtime_ns, a.run, a.records), (9, 1, Some(2)));
    assert_eq!(store.runs(1).unwrap()[0].taken, Some(1));
    assert_eq!(store.forget("/in/sub/").unwrap(), 1);
    assert_eq!(store.forget("oai+http://h/oai").unwrap(), 1);
    assert_eq!(store.files(None).unwrap().len(), 1);
    assert!(store.sources().unwrap().is_empty());
}

#[test]
fn other_databases_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("catalog.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE t (x)")
        .unwrap();
    let e = StateStore::open(&db).err().unwrap();
    assert!(matches!(e, StateError::NotAState { .. }), "{e}");
    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "not a database at all, long enough to be read as a header....",
    )
    .unwrap();
    let e = StateStore::open(&text).err().unwrap();
    assert!(matches!(e, StateError::NotAState { .. }), "{e}");
}
