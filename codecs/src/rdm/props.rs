//! Property tests over random RDM-like records: reading never panics, and whatever reads
//! successfully writes back to a record that reads as the same struct.

use super::*;
use crate::record::{Attribute, Record};
use bytes::Bytes;
use proptest::prelude::*;

/// Names the RDM structs know, in various cases, plus a few unknown ones.
const NAMES: &[&str] = &[
    "RDM-Version",
    "RDM-Type",
    "rdm-type",
    "RDM-Query-Language",
    "Catalog-Service-ID",
    "RDM-Response-Interpret",
    "RDM-Error-Message",
    "Scope",
    "View-Attributes",
    "View-Order",
    "VIEW-HITS",
    "Supported-RDM-Type",
    "Supported-RDM-Query-Language",
    "Supported-Catalog-Service-ID",
    "SD-Last-Modified",
    "SD-Expires",
    "Description",
    "Maintainer",
    "RD-Sample-1",
    "Sample-RD-2",
    "Schema-Definition-Language-Version",
    "Schema-Name",
    "Last-Modified",
    "Number-of-Entries",
    "Id",
    "Parent-Id",
    "Taxonomy-Id",
    "X-Unknown",
];

/// Values that parse as something for some attribute, and a few that do not.
const VALUES: &[&str] = &[
    "1.0",
    "rd-request",
    "status-response",
    "gatherer",
    "x-catalog://localhost:8080/main",
    "x-catalog://h/",
    "all",
    "since Sun, 06 Nov 1994 08:49:37 GMT",
    "defined SOIF-Attribute",
    "descendant/2 ROOT",
    "URL,Title",
    "-Score,+Title",
    "Title",
    "10",
    "11..20",
    "0",
    "1",
    "3",
    "Thu, 01 Jan 1997 00:00:00 GMT",
    "rd-request,status-request",
    "ROOT",
    "Education/Training",
    "blob",
    "INTEGER",
    "text/html",
    "",
    " spaced ",
];

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(NAMES).prop_map(str::to_string),
        // Numbered schema entry attributes, numbers 0..4 so entries collide and gap.
        3 => (proptest::sample::select(&schema::ENTRY_ATTRIBUTES[..]), 0u32..4)
            .prop_map(|(n, i)| if i == 0 { n.to_string() } else { format!("{n}-{i}") }),
        1 => "[A-Za-z-]{1,12}",
    ]
}

fn value() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        4 => proptest::sample::select(VALUES).prop_map(|v| Bytes::from_static(v.as_bytes())),
        1 => proptest::collection::vec(any::<u8>(), 0..20).prop_map(Bytes::from),
        1 => "\\PC{0,20}".prop_map(Bytes::from),
    ]
}

/// The attributes that make a valid object of this template.
fn required(template: &str) -> &'static [(&'static str, &'static str)] {
    match template {
        "RDMHEADER" => &[("RDM-Version", "1.0"), ("RDM-Type", "rd-request")],
        "RDMSERVER" => &[
            ("Supported-RDM-Type", "status-request"),
            ("Supported-RDM-Query-Language", "gatherer"),
            ("SD-Last-Modified", "Thu, 16 May 1996 11:29:00 GMT"),
            ("SD-Expires", "Thu, 01 Jan 1997 00:00:00 GMT"),
        ],
        "SCHEMA" => &[
            ("Last-Modified", "Thu, 16 May 1996 00:00:00 GMT"),
            ("SOIF-Attribute-1", "Title"),
        ],
        "TAXONOMY" => &[("Id", "T")],
        "CLASSIFICATION" => &[("Id", "A"), ("Parent-Id", "ROOT"), ("Taxonomy-Id", "T")],
        _ => &[],
    }
}

fn record() -> impl Strategy<Value = Record> {
    (
        proptest::sample::select(
            &[
                "RDMHEADER",
                "RDMQUERY",
                "RDMSERVER",
                "SCHEMA",
                "TAXONOMY",
                "CLASSIFICATION",
                "FILE",
            ][..],
        ),
        proptest::sample::select(&["-", "x-catalog://h:1/c", "http://x/"][..]),
        proptest::collection::vec((name(), value()), 0..14),
        any::<bool>(),
    )
        .prop_map(|(t, url, attrs, seed)| {
            let mut r = Record::new(t, url);
            // Half the records start valid, so the round trip is exercised for every
            // struct, not only for the easy ones; the random attributes then may break it.
            if seed {
                for (n, v) in required(t) {
                    r.push(n, *v);
                }
            }
            r.attributes.extend(
                attrs
                    .into_iter()
                    .map(|(n, v)| Attribute::new(Bytes::from(n), v)),
            );
            r
        })
}

/// Reads with `read`, and when that succeeds, checks the write-back reads the same.
fn check<T: PartialEq + std::fmt::Debug>(
    r: &Record,
    read: impl Fn(&Record) -> Result<T, RdmError>,
    write: impl Fn(&T) -> Record,
) -> Result<bool, TestCaseError> {
    match read(r) {
        Ok(x) => {
            let back = write(&x);
            prop_assert_eq!(read(&back), Ok(x));
            Ok(true)
        }
        Err(e) => {
            // Every error names something: an attribute, a template or a reason.
            prop_assert!(!e.to_string().is_empty());
            Ok(false)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_records_read_or_fail_cleanly_and_round_trip(r in record()) {
        let read = [
            check(&r, RdmHeader::from_record, RdmHeader::to_record)?,
            check(&r, RdmQuery::from_record, RdmQuery::to_record)?,
            check(&r, ServerDescription::from_record, ServerDescription::to_record)?,
            check(&r, Schema::from_record, Schema::to_record)?,
            check(&r, TaxonomyInfo::from_record, TaxonomyInfo::to_record)?,
            check(&r, Classification::from_record, Classification::to_record)?,
        ];
        // A record is read by at most one struct: each checks its template.
        prop_assert!(read.iter().filter(|&&ok| ok).count() <= 1);
    }

    #[test]
    fn message_reader_never_panics(records in proptest::collection::vec(record(), 0..6)) {
        let mut reader = MessageReader::new();
        for r in records {
            let _ = reader.push(r);
        }
        let _ = reader.finish();
    }

    #[test]
    fn dates_round_trip_through_text(secs in -2_000_000_000i64..250_000_000_000) {
        let d = RdmDate::from_unix(secs);
        let text = d.to_http_string();
        prop_assert_eq!(RdmDate::parse(&text).map(|p| p.unix_seconds()), Ok(secs));
    }

    #[test]
    fn date_parser_never_panics(s in "\\PC{0,40}") {
        let _ = RdmDate::parse(&s);
    }

    #[test]
    fn scopes_and_views_never_panic(s in "\\PC{0,30}") {
        let _ = GathererScope::parse(&s);
        let _ = SchemaScope::parse(&s);
        let _ = TaxonomyScope::parse(&s);
        let _ = ViewHits::parse(&s);
        let _ = ViewOrder::parse(&s);
        let _ = ViewAttributes::parse(&s);
        let _ = Csid::parse(&s);
        let _ = RdmType::parse(&s);
    }

    #[test]
    fn view_hits_round_trip(first in 1u64..1_000_000, len in 0u64..1000) {
        let h = ViewHits::Range { first, last: first + len };
        prop_assert_eq!(ViewHits::parse(&h.to_string()), Ok(h));
        prop_assert_eq!(h.take(), len + 1);
    }
}
