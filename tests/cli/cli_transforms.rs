//! The transforms of docs/transforms.md end to end through the built binary:
//! `soif convert FIXTURE -t NAME[:ARGS] --to jsonl|soif`, on the seed examples — RFC 2655
//! §6's DOCUMENTs (the SSL document with Author-1..3), App. C's `Dublin-Core-1` object,
//! the Harvest manual's `Embed<1>` FILE record and the RDM note's schema — with exit
//! statuses and the summary counts; a chain of several `-t`; a pipeline file for
//! `soif run`; the page's own examples. The view transforms and `since`, `match` and
//! `dedupe` are in `view_transforms.rs`.

use crate::common;
use common::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Output;

pub(crate) fn path(rel: &str) -> String {
    fixture(rel).display().to_string()
}

/// `soif convert ARGS…` reading `stdin`, checked to exit with `status`.
pub(crate) fn convert(args: &[&str], stdin: &[u8], status: i32) -> Output {
    let mut all = vec!["convert"];
    all.extend_from_slice(args);
    let out = run(&all, stdin);
    assert_eq!(code(&out), status, "soif {all:?}\n{}", stderr(&out));
    out
}

/// `soif convert FIXTURE -t TRANSFORM --to jsonl`, checked to exit 0.
pub(crate) fn convert_fixture(fixture: &str, transform: &str) -> Output {
    convert(&[&path(fixture), "-t", transform, "--to", "jsonl"], b"", 0)
}

/// The JSON Lines on stdout.
pub(crate) fn records(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

pub(crate) fn urls(out: &Output) -> Vec<String> {
    records(out)
        .iter()
        .map(|r| r["url"].as_str().unwrap_or("").to_string())
        .collect()
}

pub(crate) fn keys(record: &Value) -> Vec<String> {
    record["attributes"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

pub(crate) fn counts(records_in: u64, out: u64, rejected: u64, filtered: u64) -> Counts {
    Counts {
        records_in,
        out,
        rejected,
        filtered,
        repaired: 0,
    }
}

/// One SOIF object, the sizes counted here.
pub(crate) fn soif(template: &str, url: &str, attrs: &[(&str, &str)]) -> String {
    let mut s = format!("@{template} {{ {url}\n");
    for (n, v) in attrs {
        s.push_str(&format!("{n}{{{}}}:\t{v}\n", v.len()));
    }
    s.push_str("}\n");
    s
}

/// The seed fixtures that are canonical SOIF (written back byte for byte).
const SEEDS: &[&str] = &[
    "rfc2655/documents.soif",
    "rfc2655/dublin-core.soif",
    "rfc2655/cip-hint.soif",
    "harvest/ecrc-93-10.soif",
    "rdm/headers.soif",
    "rdm/server-description.soif",
    "rdm/taxonomy.soif",
    "rdm/view-score.soif",
];

// --- collapse / expand --------------------------------------------------------------------

#[test]
fn collapse_makes_the_ssl_documents_authors_an_array() {
    // RFC 2655 §3.3: "the ATTRIBUTE IDENTIFIERs "Author-1", "Author-2", and "Author-3"
    // can be used to represent three VALUEs associated with the ATTRIBUTE "Author"".
    let out = convert_fixture("rfc2655/documents.soif", "collapse");
    let recs = records(&out);
    assert_eq!(recs.len(), 3);
    let ssl = &recs[1];
    assert_eq!(
        ssl["attributes"]["Author"],
        json!(["Alan O. Freier", "Philip Karlton", "Paul C. Kocher"])
    );
    // The list takes the place of Author-1.
    assert_eq!(
        keys(ssl),
        [
            "Title",
            "Content-Type",
            "Content-Length",
            "Author",
            "Abstract"
        ]
    );
    // Records without multi-values are untouched.
    assert_eq!(keys(&recs[0]), ["Title", "Content-Type", "Content-Length"]);
    assert_eq!(summary(&out), counts(3, 3, 0, 0));
}

#[test]
fn collapse_nests_the_harvest_embedded_part() {
    // Seed 004: "Embed<1>-Nested-Filename{13}: ECRC-93-10.ps", "Embed<1>-Type{10}:
    // PostScript", … inside @UPDATE { }.
    let out = convert_fixture("harvest/ecrc-93-10.soif", "collapse");
    let recs = records(&out);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(r["action"], "update");
    assert_eq!(r["attributes"]["Type"], "Compressed");
    assert_eq!(
        r["attributes"]["Embed"],
        json!([{
            "Nested-Filename": "ECRC-93-10.ps",
            "Type": "PostScript",
            "File-Size": "428233",
            "MD5": "84c123582c3d0754a39a78a7e2fb6d23",
            "Keywords": "technical report ECRC{93{10 Polymorphic Sorts and Types for Concurrent Functional Programs Bent Thomsen"
        }])
    );
    assert_eq!(keys(r).last().map(String::as_str), Some("Embed"));
    assert_eq!(summary(&out), counts(1, 1, 0, 0));
}

#[test]
fn collapse_keeps_numeric_order_with_gaps_and_a_plain_name_first() {
    // Sun's servers numbered with gaps and out of order.
    let input = soif(
        "DOCUMENT",
        "http://x/",
        &[
            ("Author-10", "third"),
            ("Title", "T"),
            ("Author-2", "second"),
            ("Author", "plain"),
            ("Embed<2>-Type", "HTML"),
            ("Embed<1>-Type", "PostScript"),
        ],
    );
    let out = convert(&["-t", "collapse", "--to", "jsonl"], input.as_bytes(), 0);
    let r = &records(&out)[0];
    assert_eq!(
        r["attributes"]["Author"],
        json!(["plain", "second", "third"])
    );
    assert_eq!(
        r["attributes"]["Embed"],
        json!([{"Type": "PostScript"}, {"Type": "HTML"}])
    );
    assert_eq!(keys(r), ["Author", "Title", "Embed"]);
    // Expanding gives the canonical form: renumbered from 1, each group in one place.
    let out = convert(
        &["-t", "collapse", "-t", "expand", "--to", "soif"],
        input.as_bytes(),
        0,
    );
    assert_eq!(
        stdout(&out),
        soif(
            "DOCUMENT",
            "http://x/",
            &[
                ("Author-1", "plain"),
                ("Author-2", "second"),
                ("Author-3", "third"),
                ("Title", "T"),
                ("Embed<1>-Type", "PostScript"),
                ("Embed<2>-Type", "HTML"),
            ]
        )
    );
}

#[test]
fn collapse_then_expand_gives_the_seeds_back_byte_for_byte() {
    for seed in SEEDS {
        let input = std::fs::read(fixture(seed)).unwrap();
        let out = convert(
            &[
                &path(seed),
                "-t",
                "collapse",
                "-t",
                "expand",
                "--to",
                "soif",
            ],
            b"",
            0,
        );
        assert_eq!(
            stdout(&out),
            String::from_utf8_lossy(&input),
            "{seed}: collapse → expand"
        );
        assert!(
            !stderr(&out).contains("collapse:"),
            "{seed}: {}",
            stderr(&out)
        );
        // Through JSON Lines: collapse → jsonl, then jsonl → expand → soif.
        let json = convert(
            &[&path(seed), "-q", "-t", "collapse", "--to", "jsonl"],
            b"",
            0,
        );
        let back = convert(
            &["--from", "jsonl", "-t", "expand", "--to", "soif"],
            &json.stdout,
            0,
        );
        assert_eq!(
            stdout(&back),
            String::from_utf8_lossy(&input),
            "{seed}: collapse → jsonl → expand"
        );
    }
}

#[test]
fn the_rdm_schema_is_not_canonical_so_expand_renumbers_it() {
    // The note's schema numbers entries, not values: "Index-Attribute-2" belongs to
    // "SOIF-Attribute-2". collapse groups by name; expand writes the groups back numbered
    // from 1 — the documented canonical form, every value kept.
    let out = convert_fixture("rdm/schema.soif", "collapse");
    let r = &records(&out)[0];
    assert_eq!(
        r["attributes"]["SOIF-Attribute"],
        json!(["Title", "Author", "Abstract"])
    );
    assert_eq!(r["attributes"]["Data-Type"], json!(["blob"]));
    let out = convert(
        &[
            &path("rdm/schema.soif"),
            "-t",
            "collapse",
            "-t",
            "expand",
            "--to",
            "soif",
        ],
        b"",
        0,
    );
    // collapse says so, once, naming the record.
    assert!(
        stderr(&out)
            .contains("collapse: 1 record(s) had multi-value numbers with gaps or out of order")
            && stderr(&out).contains("schema.soif: byte 0, record 1"),
        "{}",
        stderr(&out)
    );
    let text = stdout(&out);
    assert!(text.contains("SOIF-Attribute-3{8}:\tAbstract\n"), "{text}");
    assert!(text.contains("Data-Type-1{4}:\tblob\n"), "{text}");
}

// --- dc ------------------------------------------------------------------------------------

#[test]
fn dc_crosswalks_the_harvest_file_record() {
    let out = convert_fixture("harvest/ecrc-93-10.soif", "dc");
    let r = &records(&out)[0];
    assert_eq!(r["template"], "Dublin-Core");
    assert_eq!(r["action"], "update");
    assert_eq!(
        r["url"],
        "ftp://ecrc.de/pub/ECRC_tech_reports/reports/ECRC-93-10.ps.Z"
    );
    // No Title in the record: no TITLE is invented.
    assert_eq!(keys(r), ["SUBJECT", "DATE", "FORMAT", "IDENTIFIER"]);
    // "Last-Modification-Time{9}: 774988159" (Unix seconds).
    assert_eq!(r["attributes"]["DATE"], "1994-07-23T18:29:19Z");
    // "Type{10}: Compressed" (the .Z file itself); the part's keywords are the subject.
    assert_eq!(r["attributes"]["FORMAT"], "application/x-compress");
    assert!(r["attributes"]["SUBJECT"]
        .as_str()
        .is_some_and(|s| s.contains("Polymorphic Sorts and Types")));
    assert_eq!(r["attributes"]["IDENTIFIER"], r["url"]);
    assert_eq!(summary(&out), counts(1, 1, 0, 0));

    // As SOIF, inside the envelope it came in.
    let out = convert(
        &[&path("harvest/ecrc-93-10.soif"), "-t", "dc", "--to", "soif"],
        b"",
        0,
    );
    let text = stdout(&out);
    assert!(
        text.starts_with("@UPDATE {\n@Dublin-Core { ftp://ecrc.de/"),
        "{text}"
    );
    assert!(text.contains("DATE{20}:\t1994-07-23T18:29:19Z\n"), "{text}");
}

#[test]
fn dc_maps_a_file_with_title_postscript_keywords_and_epoch() {
    let input = soif(
        "FILE",
        "ftp://ecrc.de/pub/ECRC-93-10.ps",
        &[
            (
                "Title",
                "Polymorphic Sorts and Types for Concurrent Functional Programs",
            ),
            ("Author", "Bent Thomsen"),
            ("Type", "PostScript"),
            ("Keywords", "polymorphism\nconcurrency\n"),
            ("Last-Modification-Time", "774988159"),
            ("Gatherer-Host", "bruno.cs.colorado.edu"),
        ],
    );
    let out = convert(&["-t", "dc", "--to", "jsonl"], input.as_bytes(), 0);
    let r = &records(&out)[0];
    assert_eq!(
        keys(r),
        [
            "TITLE",
            "CREATOR",
            "SUBJECT",
            "DATE",
            "FORMAT",
            "IDENTIFIER"
        ]
    );
    assert_eq!(r["attributes"]["FORMAT"], "application/postscript");
    assert_eq!(
        r["attributes"]["SUBJECT"],
        json!(["polymorphism", "concurrency"])
    );
    assert_eq!(r["attributes"]["DATE"], "1994-07-23T18:29:19Z");
    // In SOIF the multi-valued element is numbered (RFC 2655 §3.3).
    let out = convert(&["-t", "dc", "--to", "soif"], input.as_bytes(), 0);
    assert!(stdout(&out).contains("SUBJECT-1{12}:\tpolymorphism\nSUBJECT-2{11}:\tconcurrency\n"));
}

#[test]
fn dc_reads_every_date_form() {
    let forms = [
        ("Sun, 06 Nov 1994 08:49:37 GMT", "1994-11-06T08:49:37Z"),
        ("Sunday, 06-Nov-94 08:49:37 GMT", "1994-11-06T08:49:37Z"),
        ("Sun Nov  6 08:49:37 1994", "1994-11-06T08:49:37Z"),
        ("784111777", "1994-11-06T08:49:37Z"),
        ("February 9, 1997", "1997-02-09"),
        ("19970209", "1997-02-09"),
    ];
    let input: String = forms
        .iter()
        .enumerate()
        .map(|(i, (d, _))| soif("FILE", &format!("http://x/{i}"), &[("Last-Modified", d)]))
        .collect();
    let out = convert(
        &["-t", "dc", "-t", "select:DATE", "--to", "jsonl"],
        input.as_bytes(),
        0,
    );
    let got: Vec<Value> = records(&out)
        .iter()
        .map(|r| r["attributes"]["DATE"].clone())
        .collect();
    let want: Vec<Value> = forms.iter().map(|(_, iso)| json!(iso)).collect();
    assert_eq!(got, want);
    // What cannot be read is kept, with a warning.
    let out = convert(
        &["-t", "dc", "--to", "jsonl"],
        soif("FILE", "-", &[("Last-Modified", "yesterday")]).as_bytes(),
        0,
    );
    assert_eq!(records(&out)[0]["attributes"]["DATE"], "yesterday");
    assert!(
        stderr(&out).contains("DATE `yesterday`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn dc_passes_the_dublin_core_1_object_through_collapsed() {
    let out = convert_fixture("rfc2655/dublin-core.soif", "dc");
    let r = &records(&out)[0];
    assert_eq!(r["template"], "Dublin-Core-1");
    assert_eq!(
        r["attributes"]["CREATOR"],
        json!(["S. Weibel", "J. Kunze", "C. Lagoze"])
    );
    assert_eq!(
        r["attributes"]["CONTRIBUTOR"].as_array().map(Vec::len),
        Some(10)
    );
    assert_eq!(r["attributes"]["DATE"], "February 9, 1997");
    assert_eq!(r["attributes"]["IDENTIFIER"], "draft-kunze-dc-00.txt");
    // Written as SOIF again it is the appendix's object, byte for byte.
    let out = convert(
        &[
            &path("rfc2655/dublin-core.soif"),
            "-t",
            "dc",
            "--to",
            "soif",
        ],
        b"",
        0,
    );
    assert_eq!(
        out.stdout,
        std::fs::read(fixture("rfc2655/dublin-core.soif")).unwrap()
    );
}

#[test]
fn dc_with_a_mapping_file() {
    let dir = tempfile::tempdir().unwrap();
    let mapping = dir.path().join("mapping.toml");
    std::fs::write(
        &mapping,
        r#"
template = "DC"

[[rule]]
element = "TITLE"
from = ["Title", "Nested-Filename"]
embedded = true
first = true

[[rule]]
element = "PUBLISHER"
from = ["Gatherer-Name"]

[[rule]]
element = "FORMAT"
from = ["Type"]
embedded = true
convert = "mime"

[[rule]]
element = "DATE"
from = ["Update-Time"]
convert = "date"
"#,
    )
    .unwrap();
    let spec = format!("dc:{}", mapping.display());
    let out = convert_fixture("harvest/ecrc-93-10.soif", &spec);
    let r = &records(&out)[0];
    assert_eq!(r["template"], "DC");
    assert_eq!(keys(r), ["TITLE", "PUBLISHER", "DATE", "FORMAT"]);
    assert_eq!(r["attributes"]["TITLE"], "ECRC-93-10.ps");
    assert_eq!(
        r["attributes"]["FORMAT"],
        json!(["application/x-compress", "application/postscript"])
    );
    // A bad mapping is a usage error (exit 2) naming the file.
    std::fs::write(&mapping, "[[rule]]\nelement = \"TITLE\"\nfrom = []\n").unwrap();
    let out = convert(
        &[
            &path("harvest/ecrc-93-10.soif"),
            "-t",
            &spec,
            "--to",
            "jsonl",
        ],
        b"",
        2,
    );
    assert!(stderr(&out).contains("mapping.toml"), "{}", stderr(&out));
}

// --- validate ------------------------------------------------------------------------------

/// The note's "Schema Description" example, with uniqueness and types added.
fn typed_schema(dir: &Path) -> String {
    let p = dir.join("typed.schema.soif");
    let note = std::fs::read_to_string(fixture("rdm/schema.soif")).unwrap();
    let extra = "SOIF-Attribute-4{14}:\tContent-Length\nData-Type-4{3}:\tint\n\
                 Enforce-Uniqueness-1{1}:\t1\n}\n";
    let text = note
        .replace("Number-of-Entries{1}:\t3", "Number-of-Entries{1}:\t4")
        .trim_end()
        .strip_suffix('}')
        .unwrap()
        .to_string()
        + extra;
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn validate_with_the_notes_schema() {
    let schema = path("rdm/schema.soif");
    let docs = path("rfc2655/documents.soif");
    // Default: attributes the schema does not name are warnings; all three pass.
    let spec = format!("validate:{schema}");
    let out = convert(&[&docs, "-t", &spec, "--to", "jsonl"], b"", 0);
    assert_eq!(summary(&out), counts(3, 3, 0, 0));
    assert!(
        stderr(&out).contains("attribute Content-Type is not in the schema"),
        "{}",
        stderr(&out)
    );
    // The schema can also come from --schema.
    let out = convert(
        &[&docs, "--schema", &schema, "-t", "validate", "--to", "null"],
        b"",
        0,
    );
    assert_eq!(summary(&out), counts(3, 3, 0, 0));

    // unknown=reject under the default policy: the run fails at the first record, naming
    // the attribute and the place.
    let spec = format!("validate:{schema},unknown=reject");
    let out = convert(&[&docs, "-t", &spec, "--to", "jsonl"], b"", 1);
    let err = stderr(&out);
    assert!(
        err.contains("Content-Type: not an attribute of the schema")
            && err.contains("documents.soif: byte 0, record 1"),
        "{err}"
    );

    // --on-error skip: every record counted, exit 3.
    let out = convert(
        &[&docs, "-t", &spec, "--on-error", "skip", "--to", "jsonl"],
        b"",
        3,
    );
    assert_eq!(summary(&out), counts(3, 0, 3, 0));
    assert!(stdout(&out).is_empty());

    // --on-error quarantine: the rejected records' original bytes, readable again.
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("rejected.soif");
    let q = q.to_str().unwrap();
    let out = convert(
        &[
            &docs,
            "-t",
            &spec,
            "--on-error",
            "quarantine",
            "--quarantine",
            q,
            "--to",
            "jsonl",
        ],
        b"",
        3,
    );
    assert_eq!(summary(&out), counts(3, 0, 3, 0));
    // Each record's bytes and the newline after it: here, the whole input file.
    assert_eq!(std::fs::read(q).unwrap(), rfc_documents());
    let again = convert(&[q, "--to", "soif"], b"", 0);
    assert_eq!(again.stdout, rfc_documents());
}

#[test]
fn validate_checks_types_and_uniqueness() {
    let dir = tempfile::tempdir().unwrap();
    let schema = typed_schema(dir.path());
    let spec = format!("validate:{schema},unknown=allow");
    let mut input = String::from_utf8(rfc_documents()).unwrap();
    // The same Title again, and a Content-Length that is no int.
    input += &soif(
        "DOCUMENT",
        "http://mirror.example/",
        &[("Title", "Welcome to Netscape")],
    );
    input += &soif("DOCUMENT", "http://x/", &[("Content-Length", "5 KB")]);
    let out = convert(
        &["-t", &spec, "--on-error", "skip", "--to", "jsonl"],
        input.as_bytes(),
        3,
    );
    assert_eq!(summary(&out), counts(5, 3, 2, 0));
    assert_eq!(
        urls(&out),
        [
            "http://home.netscape.com:80/",
            "http://home.netscape.com/eng/ssl3/ssl-toc.html",
            "http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg"
        ]
    );
    let err = stderr(&out);
    assert!(
        err.contains("Title") && err.contains("Welcome to Netscape"),
        "{err}"
    );
    assert!(
        err.contains("Content-Length") && err.contains("5 KB"),
        "{err}"
    );
    // Uniqueness holds across a memory budget far too small for the fingerprints.
    let temp = tempfile::tempdir().unwrap();
    let many: String = (0..3000)
        .map(|i| {
            soif(
                "DOCUMENT",
                &format!("http://x/{i}"),
                &[("Title", &format!("T{}", i % 2000))],
            )
        })
        .collect();
    let out = convert(
        &[
            "-t",
            &spec,
            "--on-error",
            "skip",
            "--memory-budget",
            "4KiB",
            "--temp-dir",
            temp.path().to_str().unwrap(),
            "--to",
            "null",
        ],
        many.as_bytes(),
        3,
    );
    assert_eq!(summary(&out), counts(3000, 2000, 1000, 0));
    assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
}

// --- chains, errors, pipeline files --------------------------------------------------------

#[test]
fn a_chain_applies_in_the_order_given() {
    let docs = path("rfc2655/documents.soif");
    // collapse → dc → match on the crosswalked CREATOR → order → select.
    let out = convert(
        &[
            &docs,
            &docs,
            "-t",
            "dedupe",
            "-t",
            "collapse",
            "-t",
            "dc",
            "-t",
            "match:CREATOR=kocher",
            "-t",
            "select:URL,TITLE,CREATOR",
            "--to",
            "jsonl",
        ],
        b"",
        0,
    );
    let recs = records(&out);
    assert_eq!(recs.len(), 1);
    assert_eq!(
        recs[0]["attributes"],
        json!({"TITLE": "SSL Protocol V. 3.0", "CREATOR": ["Alan O. Freier", "Philip Karlton", "Paul C. Kocher"]})
    );
    assert_eq!(summary(&out), counts(6, 1, 0, 5));
    // The order matters: select first removes what match looks at.
    let out = convert(
        &[
            &docs,
            "-t",
            "select:Title",
            "-t",
            "match:Author=kocher",
            "--to",
            "jsonl",
        ],
        b"",
        0,
    );
    assert!(records(&out).is_empty());
    let out = convert(
        &[
            &docs,
            "-t",
            "match:Author=kocher",
            "-t",
            "select:Title",
            "--to",
            "jsonl",
        ],
        b"",
        0,
    );
    assert_eq!(records(&out).len(), 1);
}

#[test]
fn bad_transform_specs_are_usage_errors() {
    for spec in [
        "frobnicate",
        "order",
        "hits:ten",
        "collapse:x",
        "select:",
        "dc:/nonexistent.toml",
    ] {
        let out = convert(&["-t", spec, "--to", "null"], b"", 2);
        assert!(stderr(&out).contains("error"), "{spec}: {}", stderr(&out));
    }
}

#[test]
fn a_pipeline_file_with_transforms() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spill = d.join("spill");
    std::fs::create_dir(&spill).unwrap();
    let pipeline = d.join("p.toml");
    std::fs::write(
        &pipeline,
        format!(
            r#"
transforms = ["validate:{schema},unknown=reject", "collapse", "order:+Title"]
memory_budget = "8KiB"
temp_dir = "{spill}"

[source]
inputs = ["{docs}", "{dc}"]

[errors]
on_error = "quarantine"
quarantine = "{q}"

[[sink]]
format = "jsonl"
output = "{jsonl}"

[[sink]]
format = "soif"
output = "{soif}"
"#,
            schema = path("rdm/schema.soif"),
            docs = path("rfc2655/documents.soif"),
            dc = path("rfc2655/dublin-core.soif"),
            q = d.join("rejected.soif").display(),
            jsonl = d.join("out.jsonl").display(),
            soif = d.join("out.soif").display(),
            spill = spill.display(),
        ),
    )
    .unwrap();
    let out = run(&["run", pipeline.to_str().unwrap()], b"");
    // Every record names attributes the note's schema lacks: all quarantined, exit 3.
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(summary(&out), counts(4, 0, 4, 0));
    let mut all = rfc_documents();
    all.extend(std::fs::read(fixture("rfc2655/dublin-core.soif")).unwrap());
    assert_eq!(std::fs::read(d.join("rejected.soif")).unwrap(), all);
    let again = convert(
        &[d.join("rejected.soif").to_str().unwrap(), "--to", "soif"],
        b"",
        0,
    );
    assert_eq!(again.stdout, all);

    // Without validate: collapse and order, the same records in both sinks.
    let text = std::fs::read_to_string(&pipeline).unwrap().replace(
        &format!("\"validate:{},unknown=reject\", ", path("rdm/schema.soif")),
        "",
    );
    std::fs::write(&pipeline, text).unwrap();
    let out = run(&["run", pipeline.to_str().unwrap()], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(summary(&out), counts(4, 4, 0, 0));
    let jsonl = std::fs::read_to_string(d.join("out.jsonl")).unwrap();
    let order: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["url"].clone())
        .collect();
    // By title, the name matched as RFC 2655 §4 says (the Dublin-Core-1 object's TITLE
    // counts); the JPEG has none and comes last.
    assert_eq!(
        order,
        [
            "ftp://ds.internic.net/internet-drafts/draft-kunze-dc-00.txt",
            "http://home.netscape.com/eng/ssl3/ssl-toc.html",
            "http://home.netscape.com:80/",
            "http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg"
        ]
    );
    let soif_out = std::fs::read_to_string(d.join("out.soif")).unwrap();
    assert!(
        soif_out.contains("Author-1{14}:\tAlan O. Freier\n"),
        "{soif_out}"
    );
    assert!(
        soif_out.contains("CONTRIBUTOR-10{12}:\tWick Nichols\n"),
        "{soif_out}"
    );
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);

    // A memory_budget that is not a size is a configuration error.
    let text = std::fs::read_to_string(&pipeline)
        .unwrap()
        .replace("\"8KiB\"", "\"lots\"");
    std::fs::write(&pipeline, text).unwrap();
    let out = run(&["run", pipeline.to_str().unwrap()], b"");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("memory_budget"), "{}", stderr(&out));
}

// --- docs/transforms.md --------------------------------------------------------------------

/// Splits a command line as a POSIX shell would for the simple cases the docs use:
/// whitespace between words, single quotes around a word with spaces.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    assert!(!quoted, "unbalanced quote in {line:?}");
    if in_word {
        words.push(word);
    }
    words
}

#[test]
fn the_examples_in_docs_transforms_md_print_what_the_page_shows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/transforms.md")).unwrap();
    let mut examples = 0;
    let mut rest = page.as_str();
    while let Some(start) = rest.find("```console\n") {
        let block = &rest[start + "```console\n".len()..];
        let end = block.find("```\n").expect("a closed block");
        let (command, expected) = block[..end]
            .split_once('\n')
            .expect("a command line and its output");
        rest = &block[end..];
        let words = shell_words(command.strip_prefix("$ soif ").expect("`$ soif …`"));
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let out = run_in(Some(root), &args, b"");
        assert!(
            [0, 3].contains(&code(&out)),
            "{command}: exit {}\n{}",
            code(&out),
            stderr(&out)
        );
        // Lines starting with `soif: ` are standard error's (as tests/python/test_docs.py
        // reads the page): the messages are checked there.
        let expected: String = expected
            .lines()
            .filter(|l| !l.starts_with("soif: "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(stdout(&out), expected, "{command}");
        examples += 1;
    }
    assert!(examples >= 10, "only {examples} examples found");
}
