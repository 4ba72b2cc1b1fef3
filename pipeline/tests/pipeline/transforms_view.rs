//! The RDM view transforms (`select`, `order`, `hits`) on the note's examples, and
//! `order` as an external sort of more records than its memory budget.

use soif_codecs::soif::{decode_all, DecoderOptions};
use soif_codecs::{Record, Value};
use soif_pipeline::transforms::view::{Order, MERGE_FAN_IN};
use soif_pipeline::transforms::{build, TransformContext};
use soif_pipeline::{Collect, Transform};
use std::collections::HashMap;

fn run(chain: &mut [Box<dyn Transform>], records: Vec<Record>) -> Collect {
    let mut all = Collect {
        records,
        ..Collect::default()
    };
    for t in chain.iter_mut() {
        let out = Collect::run(t.as_mut(), std::mem::take(&mut all.records)).unwrap();
        all.records = out.records;
        all.warnings.extend(out.warnings);
        all.rejected.extend(out.rejected);
    }
    all
}

fn documents() -> Vec<Record> {
    let path = format!(
        "{}/../tests/fixtures/rfc2655/documents.soif",
        env!("CARGO_MANIFEST_DIR")
    );
    let bytes = std::fs::read(&path).unwrap();
    decode_all(&bytes, DecoderOptions::default())
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn rdm_view_title_order_first_ten() {
    // Seed 000: "View-Attributes{x}: URL,Title,Author,Last-Modified View-Hits{x}: 10
    // View-Order{x}: Title".
    let ctx = TransformContext::default();
    let mut chain = vec![
        build("order:Title", &ctx).unwrap(),
        build("hits:10", &ctx).unwrap(),
        build("select:URL,Title,Author,Last-Modified", &ctx).unwrap(),
    ];
    let out = run(&mut chain, documents());
    let titles: Vec<_> = out
        .records
        .iter()
        .map(|r| r.get_str("Title").unwrap_or("").to_string())
        .collect();
    // The JPEG has no Title: it sorts last.
    assert_eq!(titles, ["SSL Protocol V. 3.0", "Welcome to Netscape", ""]);
    let ssl = &out.records[0];
    let names: Vec<_> = ssl
        .attributes
        .iter()
        .map(|a| a.name_str().into_owned())
        .collect();
    assert_eq!(names, ["Title", "Author-1", "Author-2", "Author-3"]);
    assert_eq!(
        ssl.url_str(),
        "http://home.netscape.com/eng/ssl3/ssl-toc.html"
    );
    let jpg = &out.records[2];
    let names: Vec<_> = jpg
        .attributes
        .iter()
        .map(|a| a.name_str().into_owned())
        .collect();
    assert_eq!(names, ["Last-Modified"]);
}

#[test]
fn rdm_view_by_score() {
    // Seed 000: "View-Attributes{x}: URL,Title,Author,Last-Modified,Score View-Hits{x}: 10
    // View-Order{x}: -Score,+Title".
    let ctx = TransformContext::default();
    let mut chain = vec![
        build("collapse", &ctx).unwrap(),
        build("order:-Score,+Title", &ctx).unwrap(),
        build("hits:2", &ctx).unwrap(),
        build("select:URL,Title,Author,Last-Modified,Score", &ctx).unwrap(),
    ];
    let mut docs = documents();
    for (d, score) in docs.iter_mut().zip(["80", "100", "80"]) {
        d.push("Score", score);
    }
    let out = run(&mut chain, docs);
    assert_eq!(out.records.len(), 2);
    assert_eq!(out.records[0].get_str("Score"), Some("100"));
    assert_eq!(
        out.records[0].get("Author"),
        Some(&Value::List(vec![
            "Alan O. Freier".into(),
            "Philip Karlton".into(),
            "Paul C. Kocher".into()
        ]))
    );
    // Among the two 80s, the one with a Title comes first (missing sorts last).
    assert_eq!(out.records[1].get_str("Title"), Some("Welcome to Netscape"));
}

#[test]
fn hits_second_page() {
    let ctx = TransformContext::default();
    let mut chain = vec![build("hits:11..20", &ctx).unwrap()];
    let records = (1..=35).map(|i| Record::new("D", format!("{i}"))).collect();
    let out = run(&mut chain, records);
    let urls: Vec<_> = out
        .records
        .iter()
        .map(|r| r.url_str().into_owned())
        .collect();
    assert_eq!(urls, (11..=20).map(|i| i.to_string()).collect::<Vec<_>>());
}

#[test]
fn external_sort_beyond_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let budget = 32 << 10;
    let mut order = Order::parse(
        "-Score,+Title",
        &HashMap::new(),
        budget,
        Some(dir.path().to_path_buf()),
    )
    .unwrap();
    let n = 6000u32;
    let mut out = Collect::default();
    let mut total_bytes = 0usize;
    for i in 0..n {
        // Scores repeat, so the Title breaks ties; a 120-byte value makes the input
        // about 20 times the budget.
        let score = (i * 7919) % 97;
        let r = Record::new("DOCUMENT", format!("http://h/{i}"))
            .with("Title", format!("title {:05}", (i * 31) % n))
            .with("Score", score.to_string())
            .with("Abstract", "x".repeat(120));
        total_bytes += 160;
        order.apply(r, &mut out).unwrap();
        assert!(out.records.is_empty(), "order emits nothing before the end");
    }
    assert!(total_bytes > 10 * budget);
    assert!(
        order.runs_spilled() > MERGE_FAN_IN,
        "{} runs: expected a multi-pass merge",
        order.runs_spilled()
    );
    // Runs are merged while the input streams in: few files are open at any time.
    assert!(
        order.runs_open() < 2 * MERGE_FAN_IN,
        "{} open",
        order.runs_open()
    );
    order.finish(&mut out).unwrap();
    assert_eq!(out.records.len(), n as usize);
    let keys: Vec<(i64, String)> = out
        .records
        .iter()
        .map(|r| {
            (
                -r.get_str("Score").unwrap().parse::<i64>().unwrap(),
                r.get_str("Title").unwrap().to_string(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    // Every record came back whole.
    assert!(out
        .records
        .iter()
        .all(|r| r.get_str("Abstract").is_some_and(|a| a.len() == 120)));
    drop(order);
    // Temporary files are gone (they are unlinked as soon as they are created).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn external_sort_is_stable() {
    let mut order = Order::parse("Group", &HashMap::new(), 1 << 10, None).unwrap();
    let mut out = Collect::default();
    for i in 0..500u32 {
        let r = Record::new("D", format!("{i}")).with("Group", (i % 3).to_string());
        order.apply(r, &mut out).unwrap();
    }
    assert!(order.runs_spilled() > 1);
    order.finish(&mut out).unwrap();
    let got: Vec<u32> = out
        .records
        .iter()
        .map(|r| r.url_str().parse().unwrap())
        .collect();
    let mut want: Vec<u32> = (0..500).collect();
    want.sort_by_key(|i| i % 3);
    assert_eq!(got, want);
}

#[test]
fn bad_view_specs() {
    let ctx = TransformContext::default();
    for spec in [
        "select",
        "order",
        "order:-",
        "hits:0",
        "hits:20..11",
        "hits:ten",
    ] {
        let e = build(spec, &ctx).err();
        assert!(e.as_ref().is_some_and(|e| e.is_config()), "{spec}: {e:?}");
    }
}

// --- property: the external sort equals an in-memory stable sort -------------------------

mod props {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Ordering;

    /// The documented comparison for one value: numbers (numerically) before text
    /// (ASCII-case-insensitively, then bytewise); a missing value last in either direction.
    fn cmp_values(a: &Option<String>, b: &Option<String>, descending: bool) -> Ordering {
        fn class(v: &Option<String>) -> (u8, f64, Vec<u8>, Vec<u8>) {
            match v {
                None => (2, 0.0, vec![], vec![]),
                Some(s) => match s.trim().parse::<f64>().ok().filter(|f| !f.is_nan()) {
                    Some(n) => (0, n, vec![], vec![]),
                    None => (
                        1,
                        0.0,
                        s.to_ascii_lowercase().into_bytes(),
                        s.clone().into_bytes(),
                    ),
                },
            }
        }
        let (x, y) = (class(a), class(b));
        if x.0 == 2 || y.0 == 2 || x.0 != y.0 {
            return x.0.cmp(&y.0);
        }
        let o = x.1.total_cmp(&y.1).then(x.2.cmp(&y.2)).then(x.3.cmp(&y.3));
        if descending {
            o.reverse()
        } else {
            o
        }
    }

    fn record(i: usize, score: &Option<String>, title: &Option<String>) -> Record {
        let mut r = Record::new("D", i.to_string());
        if let Some(s) = score {
            r.push("Score", s.as_str());
        }
        if let Some(t) = title {
            r.push("Title", t.as_str());
        }
        r
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn external_equals_in_memory(
            rows in proptest::collection::vec(
                (
                    proptest::option::of("[0-9]{1,2}|[a-cA-C]{1,2}"),
                    proptest::option::of("[a-cA-C0-9]{0,3}"),
                ),
                0..120,
            ),
            budget in 200usize..2000,
        ) {
            let mut order = Order::parse("-Score,+Title", &HashMap::new(), budget, None).unwrap();
            let mut out = Collect::default();
            for (i, (s, t)) in rows.iter().enumerate() {
                order.apply(record(i, s, t), &mut out).unwrap();
            }
            order.finish(&mut out).unwrap();
            let got: Vec<usize> = out.records.iter().map(|r| r.url_str().parse().unwrap()).collect();
            let mut want: Vec<usize> = (0..rows.len()).collect();
            want.sort_by(|&a, &b| {
                cmp_values(&rows[a].0, &rows[b].0, true)
                    .then_with(|| cmp_values(&rows[a].1, &rows[b].1, false))
            });
            prop_assert_eq!(got, want);
        }
    }
}
