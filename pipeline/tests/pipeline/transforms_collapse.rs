//! `collapse` / `expand` on the seed examples, and `expand(collapse(r)) == r` for
//! canonical records as a property.

use bytes::Bytes;
use proptest::prelude::*;
use soif_codecs::rules::collapse::{
    collapse, collapse_attributes, collapse_record, expand, is_canonical,
};
use soif_codecs::{Attribute, Record, Value};
use soif_pipeline::transforms::{build, TransformContext};
use soif_pipeline::Collect;

/// RFC 2655 §6, the SSL `DOCUMENT` with three authors.
fn ssl_document() -> Record {
    Record::new("DOCUMENT", "http://home.netscape.com/eng/ssl3/ssl-toc.html")
        .with("Title", "SSL Protocol V. 3.0")
        .with("Content-Type", "text/html")
        .with("Content-Length", "5870")
        .with("Author-1", "Alan O. Freier")
        .with("Author-2", "Philip Karlton")
        .with("Author-3", "Paul C. Kocher")
        .with("Abstract", "This document specifies Version 3.0 of the <B>Secure Sockets Layer (SSL V3.0)</B> protocol, ...")
}

/// Seed 004, the first Harvest `FILE` record (Compressed PostScript, one embedded part).
fn harvest_file() -> Record {
    Record::new(
        "FILE",
        "ftp://ecrc.de/pub/ECRC_tech_reports/reports/ECRC-93-10.ps.Z",
    )
    .with("Time-to-Live", "9676800")
    .with("Last-Modification-Time", "774988159")
    .with("Refresh-Rate", "2419200")
    .with("Gatherer-Name", "Computer Science Technical Reports - Selected Text")
    .with("Gatherer-Host", "bruno.cs.colorado.edu")
    .with("Gatherer-Version", "0.3")
    .with("Type", "Compressed")
    .with("Update-Time", "774988159")
    .with("File-Size", "164373")
    .with("MD5", "43193942d4d53f5a8e4a7b4bcff7a415")
    .with("Embed<1>-Nested-Filename", "ECRC-93-10.ps")
    .with("Embed<1>-Type", "PostScript")
    .with("Embed<1>-File-Size", "428233")
    .with("Embed<1>-MD5", "84c123582c3d0754a39a78a7e2fb6d23")
    .with(
        "Embed<1>-Keywords",
        "technical report ECRC{93{10 Polymorphic Sorts and Types for Concurrent Functional Programs Bent Thomsen",
    )
}

fn names(r: &Record) -> Vec<String> {
    r.attributes
        .iter()
        .map(|a| a.name_str().into_owned())
        .collect()
}

#[test]
fn ssl_document_authors_become_a_list() {
    let r = ssl_document();
    let c = collapse(&r);
    assert_eq!(
        names(&c),
        [
            "Title",
            "Content-Type",
            "Content-Length",
            "Author",
            "Abstract"
        ]
    );
    assert_eq!(
        c.get("Author"),
        Some(&Value::List(vec![
            "Alan O. Freier".into(),
            "Philip Karlton".into(),
            "Paul C. Kocher".into()
        ]))
    );
    assert_eq!(expand(&c), r);
}

#[test]
fn harvest_embed_becomes_a_nested_part() {
    let r = harvest_file();
    let c = collapse(&r);
    let Some(Value::List(parts)) = c.get("Embed") else {
        panic!("no Embed list in {c:?}");
    };
    assert_eq!(parts.len(), 1);
    let Value::Object(part) = &parts[0] else {
        panic!("part is not an object: {:?}", parts[0]);
    };
    let part_names: Vec<_> = part.iter().map(|a| a.name_str().into_owned()).collect();
    assert_eq!(
        part_names,
        ["Nested-Filename", "Type", "File-Size", "MD5", "Keywords"]
    );
    assert_eq!(part[1].value, Value::from("PostScript"));
    // The outer Type stays a plain value beside the part's own Type.
    assert_eq!(c.get_str("Type"), Some("Compressed"));
    assert_eq!(expand(&c), r);
}

#[test]
fn dublin_core_1_contributors_in_numeric_order() {
    // RFC 2655 App. C numbers CONTRIBUTOR-1 … CONTRIBUTOR-10: 10 sorts after 9, not after 1.
    let mut r = Record::new(
        "Dublin-Core-1",
        "ftp://ds.internic.net/internet-drafts/draft-kunze-dc-00.txt",
    );
    let people = [
        "Nick Arnett",
        "Eliot Christian",
        "Martijn Koster",
        "Christian Mogensen",
        "Timothy Niesen",
        "Andrew Wood",
        "Mic Bowman",
        "Dan Connoly",
        "Michael Mauldin",
        "Wick Nichols",
    ];
    // Shuffled input order: the suffix decides.
    for i in [10, 1, 2, 3, 4, 5, 6, 7, 8, 9] {
        r.push(&format!("CONTRIBUTOR-{i}"), people[i - 1]);
    }
    let c = collapse(&r);
    let Some(Value::List(items)) = c.get("CONTRIBUTOR") else {
        panic!("no list");
    };
    let got: Vec<_> = items.iter().filter_map(Value::as_str).collect();
    assert_eq!(got, people);
}

#[test]
fn transforms_through_build() {
    let ctx = TransformContext::default();
    let mut c = build("collapse", &ctx).unwrap();
    let mut e = build("expand", &ctx).unwrap();
    let mut mid = Collect::default();
    c.apply(ssl_document(), &mut mid).unwrap();
    c.finish(&mut mid).unwrap();
    let mut out = Collect::default();
    for r in mid.records {
        e.apply(r, &mut out).unwrap();
    }
    e.finish(&mut out).unwrap();
    assert_eq!(out.records, vec![ssl_document()]);
}

// --- property: expand(collapse(r)) == r for canonical records ---------------------------

/// A plain name: letters and hyphens, never ending in `-<digits>` and without `<`, so it
/// is not mistaken for a numbered or embedded name.
fn plain_name() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9]{0,6}(-[A-Za-z][A-Za-z0-9]{0,4}){0,2}"
}

fn value() -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 0..12).prop_map(Bytes::from)
}

/// One canonical group of flat attributes, given its (unique) base name.
#[derive(Debug, Clone)]
enum Group {
    Plain(Bytes),
    Multi(Vec<Bytes>),
    /// Parts; inside a part a name with several values is numbered (`Embed<1>-A-2`).
    Embed(Vec<Vec<(String, Vec<Bytes>)>>),
}

fn group() -> impl Strategy<Value = Group> {
    let values = proptest::collection::vec(value(), 1..3);
    let part = proptest::collection::btree_map(plain_name(), values, 1..4)
        .prop_map(|m| m.into_iter().collect::<Vec<_>>());
    prop_oneof![
        value().prop_map(Group::Plain),
        proptest::collection::vec(value(), 1..5).prop_map(Group::Multi),
        proptest::collection::vec(part, 1..4).prop_map(Group::Embed),
    ]
}

fn canonical_record() -> impl Strategy<Value = Record> {
    proptest::collection::btree_map(plain_name(), group(), 0..8).prop_flat_map(|groups| {
        let groups: Vec<_> = groups.into_iter().collect();
        let n = groups.len();
        // Any order of the groups is canonical, as long as each stays contiguous.
        Just(groups).prop_shuffle().prop_map(move |groups| {
            let mut r = Record::new("FILE", "http://example.com/");
            for (name, g) in groups {
                match g {
                    Group::Plain(v) => r.attributes.push(Attribute::new(name.clone(), v)),
                    Group::Multi(vs) => {
                        for (i, v) in vs.into_iter().enumerate() {
                            r.attributes
                                .push(Attribute::new(format!("{name}-{}", i + 1), v));
                        }
                    }
                    Group::Embed(parts) => {
                        for (i, part) in parts.into_iter().enumerate() {
                            for (sub, vs) in part {
                                let several = vs.len() > 1;
                                for (j, v) in vs.into_iter().enumerate() {
                                    let sub = match several {
                                        true => format!("{sub}-{}", j + 1),
                                        false => sub.clone(),
                                    };
                                    r.attributes.push(Attribute::new(
                                        format!("{name}<{}>-{sub}", i + 1),
                                        v,
                                    ));
                                }
                            }
                        }
                    }
                }
            }
            debug_assert!(r.attributes.len() >= n);
            r
        })
    })
}

proptest! {
    #[test]
    fn expand_inverts_collapse(r in canonical_record()) {
        let c = collapse(&r);
        prop_assert_eq!(expand(&c), r);
    }

    #[test]
    fn collapse_is_idempotent_and_keeps_every_value(r in canonical_record()) {
        let c = collapse(&r);
        prop_assert_eq!(collapse(&c), c.clone());
        let before: usize = r.attributes.iter().map(|a| a.value.leaves().len()).sum();
        let after: usize = c.attributes.iter().map(|a| a.value.leaves().len()).sum();
        prop_assert_eq!(before, after);
    }
}

/// Any flat record over a few names that collide on purpose: plain, numbered (with gaps,
/// out of order, repeated) and embedded parts (whose own names collide too).
fn any_flat_record() -> impl Strategy<Value = Record> {
    let inner = prop_oneof![Just("A"), Just("A-1"), Just("A-2"), Just("B")];
    let name = prop_oneof![
        Just("A".to_string()),
        Just("A-1".to_string()),
        Just("A-2".to_string()),
        Just("A-3".to_string()),
        Just("B".to_string()),
        Just("B-1".to_string()),
        (1u64..4, inner).prop_map(|(n, i)| format!("E<{n}>-{i}")),
    ];
    proptest::collection::vec((name, value()), 0..7).prop_map(|attrs| {
        let mut r = Record::new("FILE", "-");
        for (n, v) in attrs {
            r.attributes.push(Attribute::new(n, v));
        }
        r
    })
}

proptest! {
    #[test]
    fn generated_canonical_records_are_canonical(r in canonical_record()) {
        prop_assert!(is_canonical(&r.attributes));
    }

    /// `is_canonical` says exactly which records `expand(collapse(r))` gives back, so the
    /// `collapse` transform's warning is neither missing nor spurious.
    #[test]
    fn is_canonical_is_exactly_reversibility(r in any_flat_record()) {
        let back = expand(&collapse(&r));
        prop_assert_eq!(is_canonical(&r.attributes), back == r, "{:?} -> {:?}", r, back);
    }
}

proptest! {
    /// The one-pass collapse that canonical records take gives what the general rule
    /// gives, and says whether the record was canonical.
    #[test]
    fn one_pass_collapse_agrees_with_the_general_rule(
        r in prop_oneof![canonical_record(), any_flat_record()]
    ) {
        let (c, canonical) = collapse_record(r.clone());
        prop_assert_eq!(canonical, is_canonical(&r.attributes));
        prop_assert_eq!(&c.attributes, &collapse_attributes(&r.attributes));
        prop_assert_eq!(c, collapse(&r));
    }
}
