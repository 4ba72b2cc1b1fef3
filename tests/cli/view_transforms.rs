//! The RDM view transforms (`select`, `order`, `hits`) and `since`, `match` and `dedupe`
//! end to end through the built binary, on the RDM note's schema and view examples and
//! RFC 2655's documents; the other transforms are in `cli_transforms.rs`, whose helpers
//! these tests share.

use crate::cli_transforms::{convert, convert_fixture, counts, keys, path, records, soif, urls};
use crate::common;
use common::*;

// --- select / order / hits: the RDM view ---------------------------------------------------

/// The value of `name` in an RDM query fixture (`View-Attributes`, `View-Order`, …).
fn query_value(rel: &str, name: &str) -> String {
    let text = std::fs::read_to_string(fixture(rel)).unwrap();
    text.lines()
        .find_map(|l| {
            l.strip_prefix(name)
                .and_then(|rest| rest.split_once(":\t"))
                .map(|(_, v)| v.to_string())
        })
        .unwrap_or_else(|| panic!("no {name} in {rel}"))
}

#[test]
fn the_notes_view_attributes_order_and_hits() {
    // "View-Attributes{30}: URL,Title,Author,Last-Modified", "View-Hits{2}: 10",
    // "View-Order{5}: Title".
    let q = "rdm/view-attributes.soif";
    let select = format!("select:{}", query_value(q, "View-Attributes"));
    let order = format!("order:{}", query_value(q, "View-Order"));
    let hits = format!("hits:{}", query_value(q, "View-Hits"));
    let out = convert(
        &[
            &path("rfc2655/documents.soif"),
            "-t",
            &order,
            "-t",
            &hits,
            "-t",
            &select,
            "--to",
            "jsonl",
        ],
        b"",
        0,
    );
    let recs = records(&out);
    // The JPEG has no Title: it sorts last.
    assert_eq!(
        urls(&out),
        [
            "http://home.netscape.com/eng/ssl3/ssl-toc.html",
            "http://home.netscape.com:80/",
            "http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg"
        ]
    );
    // Only the view's attributes, in the view's order; Author keeps Author-1..3.
    assert_eq!(
        keys(&recs[0]),
        ["Title", "Author-1", "Author-2", "Author-3"]
    );
    assert_eq!(keys(&recs[2]), ["Last-Modified"]);
    assert_eq!(summary(&out), counts(3, 3, 0, 0));

    // Without URL in the view the URL is SOIF's "no URL".
    let out = convert_fixture("rfc2655/documents.soif", "select:Title");
    assert_eq!(urls(&out), ["-", "-", "-"]);
}

#[test]
fn the_notes_score_view() {
    // "View-Attributes{36}: URL,Title,Author,Last-Modified,Score", "View-Order{13}:
    // -Score,+Title": a keyword query's results, best first, ties by title.
    let q = "rdm/view-score.soif";
    let select = format!("select:{}", query_value(q, "View-Attributes"));
    let order = format!("order:{}", query_value(q, "View-Order"));
    let input: String = [
        ("a", "Zebra", "9"),
        ("b", "Apple", "10"),
        ("c", "Mango", "9"),
        ("d", "Kiwi", ""),
    ]
    .iter()
    .map(|(u, t, s)| {
        let mut attrs = vec![("Title", *t), ("Content-Type", "text/html")];
        if !s.is_empty() {
            attrs.push(("Score", *s));
        }
        soif("DOCUMENT", &format!("http://x/{u}"), &attrs)
    })
    .collect();
    let out = convert(
        &["-t", &order, "-t", &select, "--to", "jsonl"],
        input.as_bytes(),
        0,
    );
    // 10 > 9 as numbers; equal scores by Title; no Score last.
    assert_eq!(
        urls(&out),
        ["http://x/b", "http://x/c", "http://x/a", "http://x/d"]
    );
    assert_eq!(keys(&records(&out)[0]), ["Title", "Score"]);

    // View-Hits ranges: the 2nd and 3rd.
    let out = convert(
        &["-t", &order, "-t", "hits:2..3", "--to", "jsonl"],
        input.as_bytes(),
        0,
    );
    assert_eq!(urls(&out), ["http://x/c", "http://x/a"]);
    assert_eq!(summary(&out), counts(4, 2, 0, 2));
}

#[test]
fn order_follows_the_schemas_data_types() {
    let dir = tempfile::tempdir().unwrap();
    let schema = |name: &str, attr: &str, ty: &str| {
        let p = dir.path().join(name);
        let text = format!(
            "@SCHEMA {{ -\nLast-Modified{{29}}:\tThu, 16 May 1996 00:00:00 GMT\n\
             SOIF-Attribute-1{{{}}}:\t{attr}\nData-Type-1{{{}}}:\t{ty}\n}}\n",
            attr.len(),
            ty.len()
        );
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let scores = path("transforms/scores.soif");
    // Score as varchar: text order, so "9" sorts above "10" in descending order.
    let text = schema("varchar.soif", "Score", "varchar");
    let out = convert(
        &[
            &scores,
            "--schema",
            &text,
            "-t",
            "order:-Score",
            "--to",
            "jsonl",
        ],
        b"",
        0,
    );
    assert_eq!(
        urls(&out),
        [
            "http://example.org/a",
            "http://example.org/c",
            "http://example.org/b",
            "http://example.org/d"
        ]
    );
    // Last-Modified as date: time order across the HTTP forms (as text, "Sun Nov" would
    // sort after "Sunday"); equal times keep input order.
    let date = schema("date.soif", "Last-Modified", "date");
    let out = convert(
        &[
            &path("rfc2655/documents.soif"),
            &path("transforms/dates.soif"),
            "--schema",
            &date,
            "-t",
            "order:-Last-Modified",
            "-t",
            "hits:4",
            "--to",
            "jsonl",
        ],
        b"",
        0,
    );
    assert_eq!(
        urls(&out),
        [
            "http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg",
            "http://example.org/imf",
            "http://example.org/rfc850",
            "http://example.org/asctime"
        ]
    );
}

#[test]
fn order_sorts_more_records_than_its_memory_budget() {
    const N: usize = 20_000;
    // A permutation of 0..N (7919 is prime to N).
    let input: String = (0..N)
        .map(|i| {
            soif(
                "FILE",
                &format!("http://example.org/{i}"),
                &[
                    ("N", &((i * 7919) % N).to_string()),
                    ("Pad", &"x".repeat(40)),
                ],
            )
        })
        .collect();
    let temp = tempfile::tempdir().unwrap();
    let tmp = temp.path().to_str().unwrap();
    // About 1.7 MB of records through a 64 KiB budget: many sorted runs on disk.
    let out = convert(
        &[
            "-t",
            "order:-N",
            "--memory-budget",
            "64KiB",
            "--temp-dir",
            tmp,
            "--to",
            "jsonl",
        ],
        input.as_bytes(),
        0,
    );
    let got: Vec<usize> = records(&out)
        .iter()
        .map(|r| {
            r["attributes"]["N"]
                .as_str()
                .and_then(|n| n.parse().ok())
                .unwrap()
        })
        .collect();
    let want: Vec<usize> = (0..N).rev().collect();
    assert_eq!(got, want);
    assert_eq!(summary(&out), counts(N as u64, N as u64, 0, 0));
    // The runs were removed.
    assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);

    // The budget decides whether it spills: with a directory that does not exist, a
    // small budget fails naming it, the default budget never needs it.
    let missing = temp.path().join("missing");
    let missing = missing.to_str().unwrap();
    let args = ["-t", "order:-N", "--temp-dir", missing, "--to", "null"];
    let out = convert(
        &[&args[..], &["--memory-budget", "64KiB"]].concat(),
        input.as_bytes(),
        1,
    );
    assert!(
        stderr(&out).contains(&format!("sorted run in {missing}")),
        "{}",
        stderr(&out)
    );
    convert(&args, input.as_bytes(), 0);
    // A budget that is not a size is a usage error.
    convert(
        &[
            "-t",
            "order:-N",
            "--memory-budget",
            "12 parsecs",
            "--to",
            "null",
        ],
        b"",
        2,
    );
}

// --- since, match, dedupe ------------------------------------------------------------------

#[test]
fn since_the_notes_date() {
    // The note's gatherer query: "Scope{35}: since Sun, 06 Nov 1994 08:49:37 GMT".
    let scope = query_value("rdm/gatherer-since.soif", "Scope");
    let date = scope.strip_prefix("since ").unwrap();
    let spec = format!("since:{date}");
    let out = convert(
        &[
            &path("rfc2655/documents.soif"),
            &path("harvest/ecrc-93-10.soif"),
            "-t",
            &spec,
            "--to",
            "jsonl",
        ],
        b"",
        0,
    );
    // Only the JPEG (Last-Modified 11-Jun-96) is newer; ECRC-93-10 was modified in July
    // 1994; the other two documents have no date.
    assert_eq!(
        urls(&out),
        ["http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg"]
    );
    assert_eq!(summary(&out), counts(4, 1, 0, 3));
    assert!(
        stderr(&out).contains("since: left out 2 record(s) without"),
        "{}",
        stderr(&out)
    );

    // "At or after": the exact second counts, in any of the date forms, Update-Time too.
    let input = [
        soif(
            "FILE",
            "http://a/",
            &[("Last-Modification-Time", "784111777")],
        ),
        soif(
            "FILE",
            "http://b/",
            &[("Last-Modification-Time", "784111776")],
        ),
        soif("FILE", "http://c/", &[("Update-Time", "784111778")]),
        soif(
            "FILE",
            "http://d/",
            &[("Last-Modified", "Sunday, 06-Nov-94 08:49:37 GMT")],
        ),
    ]
    .concat();
    let out = convert(&["-t", &spec, "--to", "jsonl"], input.as_bytes(), 0);
    assert_eq!(urls(&out), ["http://a/", "http://c/", "http://d/"]);
    // A date that cannot be read is a usage error.
    convert(&["-t", "since:someday", "--to", "null"], b"", 2);
}

#[test]
fn match_follows_rfc_2655_section_4() {
    // "the query VALUE "Garcia" should match the SOIF VALUEs "Garcia", "GARCIA", and
    // "Jose Garcia y Montes"" and "the ATTRIBUTE "author" should match the IDENTIFIERs
    // "author", "Author", "AUTHOR", and "Author-1"".
    let input = [
        soif(
            "DOCUMENT",
            "http://1/",
            &[("Author-1", "Jose Garcia y Montes")],
        ),
        soif("DOCUMENT", "http://2/", &[("AUTHOR", "GARCIA")]),
        soif("DOCUMENT", "http://3/", &[("author", "Garcia")]),
        soif("DOCUMENT", "http://4/", &[("Author-2", "Garcia-Molina")]),
        soif("DOCUMENT", "http://5/", &[("Title", "Garcia")]),
        soif("DOCUMENT", "http://6/", &[("Author", "Garcilaso")]),
    ]
    .concat();
    let out = convert(
        &["-t", "match:author=Garcia", "--to", "jsonl"],
        input.as_bytes(),
        0,
    );
    assert_eq!(
        urls(&out),
        ["http://1/", "http://2/", "http://3/", "http://4/"]
    );
    assert_eq!(summary(&out), counts(6, 4, 0, 2));

    let out = convert_fixture("rfc2655/documents.soif", "match:Author=karlton");
    assert_eq!(
        urls(&out),
        ["http://home.netscape.com/eng/ssl3/ssl-toc.html"]
    );
    assert_eq!(summary(&out), counts(3, 1, 0, 2));
    // A missing `=` is a usage error.
    convert(&["-t", "match:Garcia", "--to", "null"], b"", 2);
}

#[test]
fn dedupe_by_url_and_by_attribute() {
    let docs = path("rfc2655/documents.soif");
    let out = convert(&[&docs, &docs, "-t", "dedupe", "--to", "soif"], b"", 0);
    assert_eq!(out.stdout, rfc_documents());
    assert_eq!(summary(&out), counts(6, 3, 0, 3));
    let out = convert(&[&docs, &docs, "-t", "dedupe:url", "--to", "null"], b"", 0);
    assert_eq!(summary(&out), counts(6, 3, 0, 3));
    // By Content-Type: the first text/html and the first image/jpeg.
    let out = convert(
        &[&docs, "-t", "dedupe:Content-Type", "--to", "jsonl"],
        b"",
        0,
    );
    assert_eq!(
        urls(&out),
        [
            "http://home.netscape.com:80/",
            "http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg"
        ]
    );
    assert_eq!(summary(&out), counts(3, 2, 0, 1));
    // Many keys through a tiny budget: fingerprints spill, the answer is the same.
    let temp = tempfile::tempdir().unwrap();
    let input: String = (0..5000)
        .map(|i| soif("FILE", &format!("http://x/{}", i % 3000), &[]))
        .collect();
    let out = convert(
        &[
            "-t",
            "dedupe",
            "--memory-budget",
            "2KiB",
            "--temp-dir",
            temp.path().to_str().unwrap(),
            "--to",
            "null",
        ],
        input.as_bytes(),
        0,
    );
    assert_eq!(summary(&out), counts(5000, 3000, 0, 2000));
}
