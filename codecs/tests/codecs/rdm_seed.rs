//! Every RDM example of the note (seed `000_…txt`), decoded and read into the typed
//! structs of `soif_codecs::rdm`:
//! - exactly as printed (one line, `{x}` sizes, miscounts), with the lenient decoder;
//! - from corrected, canonical copies in `tests/fixtures/rdm/`, with the strict decoder.
//!
//! Both readings must give the same structs, and the structs must write back.

use soif_codecs::rdm::{
    request_from_form, Classification, Csid, DataType, Direction, GathererScope, MessageItem,
    MessageReader, QueryLanguage, RdmHeader, RdmQuery, RdmType, Schema, SchemaScope,
    ServerDescription, Taxonomy, TaxonomyInfo, TaxonomyNode, TaxonomyScope, ViewHits,
};
use soif_codecs::soif::{decode_all, encode_record, DecodeError, DecoderOptions};
use soif_codecs::Record;

const SEED: &str = "seeds/000_778b65f732668269.txt";

fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{}/../tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// The printed example: from `marker` to the end of its line in the seed.
fn printed(marker: &str) -> Vec<u8> {
    let text = fixture(SEED);
    let start = text
        .windows(marker.len())
        .position(|w| w == marker.as_bytes())
        .unwrap_or_else(|| panic!("{marker:?} not in the seed"));
    let end = text[start..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(text.len(), |e| start + e);
    text[start..end].to_vec()
}

fn ok(items: Vec<Result<Record, DecodeError>>) -> Vec<Record> {
    items
        .into_iter()
        .map(|r| r.unwrap_or_else(|e| panic!("unexpected error: {e}")))
        .collect()
}

/// The printed example decoded leniently (it has `{x}` sizes and spaces for tabs).
fn lenient(marker: &str) -> Vec<Record> {
    ok(decode_all(
        &printed(marker),
        DecoderOptions::default().lenient(),
    ))
}

/// The canonical copy decoded strictly.
fn strict(name: &str) -> Vec<Record> {
    let records = ok(decode_all(
        &fixture(&format!("rdm/{name}")),
        DecoderOptions::default(),
    ));
    assert!(records.iter().all(|r| r.repairs.is_empty()));
    records
}

/// Lenient (printed) and strict (canonical) readings agree attribute for attribute.
fn same_records(a: &[Record], b: &[Record]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.template, y.template);
        assert_eq!(x.url, y.url);
        assert_eq!(x.attributes, y.attributes);
    }
}

/// Reads a whole message through `MessageReader`.
fn message(records: &[Record]) -> (RdmHeader, Vec<MessageItem>) {
    let mut reader = MessageReader::new();
    let mut items = Vec::new();
    for r in records {
        items.push(reader.push(r.clone()).unwrap_or_else(|e| panic!("{e}")));
    }
    let header = reader.finish().unwrap_or_else(|e| panic!("{e}")).clone();
    (header, items.split_off(1))
}

fn query_of(items: &[MessageItem]) -> &RdmQuery {
    match items {
        [MessageItem::Query(q)] => q,
        other => panic!("expected one @RDMQUERY, got {other:?}"),
    }
}

fn encode(records: &[Record]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        encode_record(r, &mut out);
    }
    out
}

// "Some example RDM headers include: @RDMHEADER { - RDM-Version{3}: 1.0 RDM-Type{14}:
// status-request } @RDMHEADER { … rd-request … } @RDMHEADER { … rd-response … }"
#[test]
fn example_headers() {
    let records = lenient("@RDMHEADER { - RDM-Version{3}: 1.0 RDM-Type{14}");
    same_records(&records, &strict("headers.soif"));
    let headers: Vec<RdmHeader> = records
        .iter()
        .map(|r| RdmHeader::from_record(r).unwrap())
        .collect();
    assert_eq!(headers.len(), 3);

    assert_eq!(headers[0].version, "1.0");
    assert_eq!(headers[0].rdm_type, RdmType::StatusRequest);
    assert_eq!(headers[0].query_language, None);

    assert_eq!(headers[1].rdm_type, RdmType::RdRequest);
    assert_eq!(headers[1].query_language, Some(QueryLanguage::Gatherer));
    assert_eq!(
        headers[1].catalog,
        Some(Csid::new("www.netscape.com", Some(80), "techpubs"))
    );

    assert_eq!(headers[2].rdm_type, RdmType::RdResponse);
    assert_eq!(headers[2].error_message.as_deref(), Some("0 results"));

    // Written back, they are the canonical copy byte for byte.
    let back: Vec<Record> = headers.iter().map(RdmHeader::to_record).collect();
    assert_eq!(encode(&back), fixture("rdm/headers.soif"));
}

// "In this case, we're only interested in the URL, Title, Author, and Last-Modified
// attributes. The result set contains at most 10 hits and the result set is ordered by
// the Title attribute"
#[test]
fn view_example_attributes() {
    let records = lenient("@RDMQUERY { - View-Attributes{x}: URL,Title,Author,Last-Modified View");
    same_records(&records, &strict("view-attributes.soif"));
    let q = RdmQuery::from_record(&records[0]).unwrap();
    assert_eq!(q.scope, None);
    let attrs = q.view.attributes.as_ref().unwrap();
    assert_eq!(attrs.names(), ["URL", "Title", "Author", "Last-Modified"]);
    assert_eq!(q.view.hits, Some(ViewHits::First(10)));
    let order = q.view.order.as_ref().unwrap();
    assert_eq!(order.keys().len(), 1);
    assert_eq!(order.keys()[0].attribute, "Title");
    assert_eq!(order.keys()[0].direction, Direction::Ascending);
    assert_eq!(q.to_record().attributes, records[0].attributes);
}

// "For IR-based searches, you want to sort by the score (or relevance ranking)"
#[test]
fn view_example_score() {
    let records = lenient("@RDMQUERY { - View-Attributes{x}: URL,Title,Author,Last-Modified,Score");
    same_records(&records, &strict("view-score.soif"));
    let q = RdmQuery::from_record(&records[0]).unwrap();
    assert!(q.view.attributes.as_ref().unwrap().contains("score"));
    let keys = q.view.order.as_ref().unwrap().keys().to_vec();
    assert_eq!(
        keys.iter()
            .map(|k| (k.attribute.as_str(), k.direction))
            .collect::<Vec<_>>(),
        [
            ("Score", Direction::Descending),
            ("Title", Direction::Ascending)
        ]
    );
    assert_eq!(q.to_record().attributes, records[0].attributes);
}

// "To send all RD's using the default view: @RDMQUERY { - Scope{3}: all }"
#[test]
fn gatherer_all() {
    let records = lenient("@RDMQUERY { - Scope{3}: all }");
    same_records(&records, &strict("gatherer-all.soif"));
    let q = RdmQuery::from_record(&records[0]).unwrap();
    assert_eq!(q.gatherer_scope().unwrap(), Some(GathererScope::All));
    assert!(q.view.is_default());
}

// "To send all RD's that have been modified since the given date (as in HTTP/1.0 date
// format specification), using the default view"
#[test]
fn gatherer_since() {
    let records = lenient("@RDMQUERY { - Scope{34}: since");
    same_records(&records, &strict("gatherer-since.soif"));
    let q = RdmQuery::from_record(&records[0]).unwrap();
    match q.gatherer_scope().unwrap() {
        // Sun, 06 Nov 1994 08:49:37 GMT
        Some(GathererScope::Since(d)) => assert_eq!(d.unix_seconds(), 784_111_777),
        other => panic!("{other:?}"),
    }
    assert_eq!(encode(&[q.to_record()]), fixture("rdm/gatherer-since.soif"));
}

// "To send all RD's, but only the URL, Title, and Last-Modified attributes"
#[test]
fn gatherer_all_with_view() {
    let records = lenient("@RDMQUERY { - Scope{x}: all View-Attributes{x}");
    same_records(&records, &strict("gatherer-view.soif"));
    let q = RdmQuery::from_record(&records[0]).unwrap();
    assert_eq!(q.gatherer_scope().unwrap(), Some(GathererScope::All));
    assert_eq!(
        q.view.attributes.unwrap().names(),
        ["URL", "Title", "Last-Modified"]
    );
}

// "Example Server Description: @RDMSERVER { x-catalog://powell.mcom.com:80/wwwdvl …"
#[test]
fn server_description() {
    let records = lenient("@RDMSERVER { x-catalog://powell.mcom.com:80/wwwdvl");
    same_records(&records, &strict("server-description.soif"));
    let sd = ServerDescription::from_record(&records[0]).unwrap();
    assert_eq!(
        sd.csid(),
        Some(Csid::new("powell.mcom.com", Some(80), "wwwdvl"))
    );
    assert_eq!(
        sd.description.as_deref(),
        Some("Contains information intended for World Wide Web developers1")
    );
    assert_eq!(
        sd.supported_types,
        [
            RdmType::RdRequest,
            RdmType::TaxonomyDescriptionRequest,
            RdmType::ServerDescriptionRequest,
            RdmType::SchemaDescriptionRequest,
            RdmType::StatusRequest
        ]
    );
    assert_eq!(sd.supported_catalogs, [sd.csid().unwrap()]);
    assert_eq!(
        sd.supported_query_languages,
        [QueryLanguage::Gatherer, QueryLanguage::SampleKeyword]
    );
    let samples: Vec<_> = sd
        .samples
        .iter()
        .map(|a| (a.name_str().into_owned(), a.value.as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        samples,
        [
            ("RD-Sample-1".to_string(), "@DOCUMENT ..."),
            ("RD-Sample-2".to_string(), "@DOCUMENT ..."),
            ("RD-Sample-3".to_string(), "@DOCUMENT ...")
        ]
    );
    // Thu, 16 May 1996 11:29:00 GMT; "Thu, 01 Jan 1997" (a Wednesday, as printed).
    assert_eq!(sd.last_modified.unix_seconds(), 832_246_140);
    assert_eq!(sd.expires.unix_seconds(), 852_076_800);
    assert_eq!(sd.expires.to_string(), "Thu, 01 Jan 1997 00:00:00 GMT");
    // The struct writes the note's attribute order back, so the canonical copy is
    // reproduced byte for byte.
    assert_eq!(
        encode(&[sd.to_record()]),
        fixture("rdm/server-description.soif")
    );
}

// "Below is a very simple schema description: @SCHEMA { - …"
#[test]
fn schema_description() {
    let records = lenient("@SCHEMA { - Schema-Definition-Language-Version{x}");
    same_records(&records, &strict("schema.soif"));
    let s = Schema::from_record(&records[0]).unwrap();
    assert_eq!(s.language_version(), "1.0");
    assert_eq!(s.url, None);
    assert_eq!(s.name, None, "the note's example has no Schema-Name");
    assert_eq!(s.last_modified.to_string(), "Thu, 16 May 1996 00:00:00 GMT");
    assert_eq!(s.number_of_entries, Some(3));
    assert_eq!(s.maintainer.as_deref(), Some("dhardy@netscape.com"));
    let names: Vec<_> = s
        .entries
        .iter()
        .map(|e| e.soif_attribute.as_str())
        .collect();
    assert_eq!(names, ["Title", "Author", "Abstract"]);

    let title = s.entry("Title").unwrap();
    assert_eq!(
        title.description.as_deref(),
        Some("Contains the Title of the resource.")
    );
    assert_eq!(title.data_type(), DataType::Varchar, "the note's default");
    assert_eq!(title.content_type(), "text/plain", "the note's default");
    assert_eq!(title.index_priority(), None);

    let author = s.entry("Author").unwrap();
    assert_eq!(author.index_priority(), Some(1));
    assert_eq!(
        author.description.as_deref(),
        Some("Full name of the resource authors.")
    );

    let abstract_ = s.entry("Abstract").unwrap();
    assert_eq!(abstract_.data_type(), DataType::Blob);
    assert_eq!(
        abstract_.description.as_deref(),
        Some("Brief description of the resource.")
    );
    assert!(!abstract_.is_unique() && !abstract_.internal() && !abstract_.in_root());

    // Round trip through the encoder and the strict decoder.
    let again = ok(decode_all(
        &encode(&[s.to_record()]),
        DecoderOptions::default(),
    ));
    assert_eq!(Schema::from_record(&again[0]).unwrap(), s);
}

// The three schema-basic requests: "To send the entire schema", "only those pieces in the
// default view", "and impose a view".
#[test]
fn schema_basic_requests() {
    let schema = Schema::from_record(&strict("schema.soif")[0]).unwrap();
    let cases = [
        (
            "@RDMHEADER { - RDM-Version{x}: 1.0 RDM-Type{x}: schema-description-request RDM-Query-Language{x}: schema-basic } @RDMQUERY { - Scope{x}: defined SOIF-Attribute }",
            "schema-basic-all.soif",
            "SOIF-Attribute",
            None,
        ),
        (
            "@RDMHEADER { - RDM-Version{x}: 1.0 RDM-Type{x}: schema-description-request RDM-Query-Language{x}: schema-basic } @RDMQUERY { - Scope{x}: defined Default-View-Attribute }",
            "schema-basic-default-view.soif",
            "Default-View-Attribute",
            None,
        ),
        (
            "@RDMHEADER { - RDM-Version{x}: 1.0 RDM-Type{x}: schema-description-request RDM-Query-Language{x}: schema-basic } @RDMQUERY { - Scope{x}: defined Default-View-Attribute View-Attributes",
            "schema-basic-view.soif",
            "Default-View-Attribute",
            Some(["soif-attribute", "default-view-attribute"]),
        ),
    ];
    for (marker, canonical, defined, view) in cases {
        let records = lenient(marker);
        same_records(&records, &strict(canonical));
        let (header, body) = message(&records);
        assert_eq!(header.rdm_type, RdmType::SchemaDescriptionRequest);
        assert_eq!(header.query_language, Some(QueryLanguage::SchemaBasic));
        let q = query_of(&body);
        let scope = q.schema_scope().unwrap().unwrap();
        assert_eq!(
            scope,
            SchemaScope {
                defined: defined.into()
            }
        );
        assert_eq!(
            q.view.attributes.as_ref().map(|a| a.names().to_vec()),
            view.map(|v| v.map(String::from).to_vec())
        );
        // Run it on the note's schema: all three entries define SOIF-Attribute, none is
        // in a default view.
        let selected = schema.select(&scope).unwrap();
        let expected = if defined == "SOIF-Attribute" { 3 } else { 0 };
        assert_eq!(selected.entries.len(), expected, "{defined}");
    }
}

// "Below is an example taxonomy … @TAXONOMY { - Id{x}: Netscape Sample 1 …"
#[test]
fn taxonomy_description() {
    let records = lenient("@TAXONOMY { - Id{x}: Netscape Sample 1");
    same_records(&records, &strict("taxonomy.soif"));
    assert_eq!(records.len(), 5);
    let info = TaxonomyInfo::from_record(&records[0]).unwrap();
    assert_eq!(info.id, "Netscape Sample 1");
    assert_eq!(
        info.description.as_deref(),
        Some("Sample Taxonomy which captures a basic Business organizational structure.")
    );
    let classes: Vec<Classification> = records[1..]
        .iter()
        .map(|r| Classification::from_record(r).unwrap())
        .collect();
    assert_eq!(classes[0].id, "Education/Training");
    assert!(classes[0].is_top_level());
    assert_eq!(
        classes[3].id,
        "Education/Training:Internal Training Classes:Schedule"
    );
    assert_eq!(
        classes[3].parent_id,
        "Education/Training:Internal Training Classes"
    );
    assert!(classes.iter().all(|c| c.taxonomy_id == "Netscape Sample 1"));

    let t = Taxonomy::from_records(&records).unwrap();
    assert_eq!(t.classifications().len(), 4);
    let back = t.to_records();
    assert_eq!(encode(&back), fixture("rdm/taxonomy.soif"));

    // The same records as a taxonomy-description-response message.
    let mut with_header = vec![RdmHeader::new(RdmType::TaxonomyDescriptionResponse).to_record()];
    with_header.extend(records);
    let (_, body) = message(&with_header);
    assert!(matches!(body[0], MessageItem::Taxonomy(_)));
    assert!(body[1..]
        .iter()
        .all(|i| matches!(i, MessageItem::Classification(_))));
}

// The taxonomy-basic requests: "To send the entire taxonomy (node and everything below)"
// and "To send the entire only the children (e.g., node and 1 directly below)", the last
// two printed as one line joined by "OR".
#[test]
fn taxonomy_basic_requests() {
    let taxonomy = Taxonomy::from_records(&strict("taxonomy.soif")).unwrap();
    let ids = |scope: &TaxonomyScope| -> Vec<String> {
        taxonomy
            .select(scope)
            .unwrap()
            .iter()
            .map(|c| c.id.clone())
            .collect()
    };

    let records = lenient(
        "@RDMHEADER { - RDM-Version{x}: 1.0 RDM-Type{x}: taxonomy-description-request RDM-Query-Language{x}: taxonomy-basic } @RDMQUERY { - Scope{x}: descendant",
    );
    same_records(&records, &strict("taxonomy-basic-descendant.soif"));
    let (header, body) = message(&records);
    assert_eq!(header.rdm_type, RdmType::TaxonomyDescriptionRequest);
    assert_eq!(header.query_language, Some(QueryLanguage::TaxonomyBasic));
    let scope = query_of(&body).taxonomy_scope().unwrap().unwrap();
    assert_eq!(
        scope,
        TaxonomyScope::Descendant {
            node: TaxonomyNode::Root,
            depth: None
        }
    );
    assert_eq!(ids(&scope).len(), 4);

    // "… Scope{x}: anklebiter ROOT } OR @RDMHEADER { … anklebiter Education/Training:
    // Internal Training Classes }": the "OR" is prose between two messages; the lenient
    // decoder reports it and goes on.
    let items = decode_all(
        &printed(
            "@RDMHEADER { - RDM-Version{x}: 1.0 RDM-Type{x}: taxonomy-description-request RDM-Query-Language{x}: taxonomy-basic } @RDMQUERY { - Scope{x}: anklebiter",
        ),
        DecoderOptions::default().lenient(),
    );
    let (good, bad): (Vec<_>, Vec<_>) = items.into_iter().partition(Result::is_ok);
    assert_eq!(bad.len(), 1, "{bad:?}");
    let garbage = bad[0].as_ref().unwrap_err();
    assert_eq!(garbage.raw().map(|b| b.as_ref()), Some(&b"OR "[..]));
    let records: Vec<Record> = good.into_iter().map(Result::unwrap).collect();
    same_records(&records, &strict("taxonomy-basic-anklebiter.soif"));
    assert_eq!(records.len(), 4);

    let (_, body) = message(&records[..2]);
    let root = query_of(&body).taxonomy_scope().unwrap().unwrap();
    assert_eq!(root, TaxonomyScope::Anklebiter(TaxonomyNode::Root));
    assert_eq!(ids(&root), ["Education/Training"]);

    let (_, body) = message(&records[2..]);
    let itc = query_of(&body).taxonomy_scope().unwrap().unwrap();
    assert_eq!(
        itc,
        TaxonomyScope::Anklebiter(TaxonomyNode::Classification(
            "Education/Training:Internal Training Classes".into()
        ))
    );
    assert_eq!(
        ids(&itc),
        [
            "Education/Training:Internal Training Classes",
            "Education/Training:Internal Training Classes:Course Descriptions",
            "Education/Training:Internal Training Classes:Schedule"
        ]
    );
}

// "To send a query to the RDM server, use the RD Request RDM message and a toy
// "sample-keyword-ql" query language: Query -> Scope: netscape; View-Hits: 10" — the GET
// form, built as the objects it stands for.
#[test]
fn keyword_request_built_in_code_round_trips() {
    let header =
        RdmHeader::new(RdmType::RdRequest).with_query_language(QueryLanguage::SampleKeyword);
    let mut query = RdmQuery::with_scope("netscape");
    query.view.hits = Some(ViewHits::First(10));
    query.view.attributes = Some("url,title,author".parse().unwrap());
    let bytes = encode(&[header.to_record(), query.to_record()]);
    let records = ok(decode_all(&bytes, DecoderOptions::default()));
    let (h, body) = message(&records);
    assert_eq!(h, header);
    assert_eq!(query_of(&body), &query);
}

// "Example URLs": the GET form of status and rd requests, as printed in the note. (Their
// values need no percent-decoding, so splitting on `&` and `=` is the whole form decoding.)
#[test]
fn example_get_urls() {
    let text = String::from_utf8(fixture(SEED)).unwrap();
    let urls: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("https://host:port/rdm/incoming?"))
        .collect();
    assert_eq!(urls.len(), 4, "{urls:?}");
    let requests: Vec<_> = urls
        .iter()
        .map(|q| {
            request_from_form(
                q.split('&')
                    .map(|kv| kv.split_once('=').unwrap_or((kv, ""))),
            )
            .unwrap_or_else(|e| panic!("{q}: {e}"))
        })
        .collect();

    // "To test the existence/readiness of an RDM server, use the status request"
    assert_eq!(requests[0].0.rdm_type, RdmType::StatusRequest);
    assert!(requests[0].1.is_none());

    // "To collect all of the RDs from an RDM server"
    let (h, q) = &requests[1];
    assert_eq!(h.rdm_type, RdmType::RdRequest);
    assert_eq!(h.query_language, Some(QueryLanguage::Gatherer));
    let q = q.as_ref().unwrap();
    assert_eq!(q.gatherer_scope().unwrap(), Some(GathererScope::All));

    // "Query -> Scope: netscape; View-Hits: 10"
    let (h, q) = &requests[2];
    assert_eq!(h.query_language, Some(QueryLanguage::SampleKeyword));
    let q = q.as_ref().unwrap();
    assert_eq!(q.scope.as_deref(), Some("netscape"));
    assert_eq!(q.view.hits, Some(ViewHits::First(10)));
    assert!(q.view.attributes.is_none());

    // "Query -> Scope: netscape; View-Hits: 10; View-Attributes: URL, Title, Author"
    let q = requests[3].1.as_ref().unwrap();
    let attrs = q.view.attributes.as_ref().unwrap();
    assert!(["URL", "Title", "Author"].iter().all(|a| attrs.contains(a)));
    assert_eq!(attrs.names().len(), 3);
}

// Every canonical copy decodes strictly, needs no repair, re-encodes byte for byte, and
// its RDM objects survive struct -> record -> struct.
#[test]
fn canonical_copies_are_canonical() {
    let dir = format!("{}/../tests/fixtures/rdm", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".soif"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 14, "{names:?}");
    for name in names {
        let bytes = fixture(&format!("rdm/{name}"));
        let records = strict(&name);
        assert_eq!(encode(&records), bytes, "{name}");
        for r in &records {
            match r.template_str().as_ref() {
                "RDMHEADER" => {
                    let h = RdmHeader::from_record(r).unwrap();
                    assert_eq!(RdmHeader::from_record(&h.to_record()), Ok(h));
                }
                "RDMQUERY" => {
                    let q = RdmQuery::from_record(r).unwrap();
                    assert_eq!(RdmQuery::from_record(&q.to_record()), Ok(q));
                }
                "RDMSERVER" => {
                    let s = ServerDescription::from_record(r).unwrap();
                    assert_eq!(ServerDescription::from_record(&s.to_record()), Ok(s));
                }
                "SCHEMA" => {
                    let s = Schema::from_record(r).unwrap();
                    assert_eq!(Schema::from_record(&s.to_record()), Ok(s));
                }
                "TAXONOMY" => {
                    let t = TaxonomyInfo::from_record(r).unwrap();
                    assert_eq!(TaxonomyInfo::from_record(&t.to_record()), Ok(t));
                }
                "CLASSIFICATION" => {
                    let c = Classification::from_record(r).unwrap();
                    assert_eq!(Classification::from_record(&c.to_record()), Ok(c));
                }
                other => panic!("{name}: unexpected @{other}"),
            }
        }
    }
}
