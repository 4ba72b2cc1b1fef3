//! Every RDM type of the note's table over HTTP, with the note's example requests
//! (seed `000_…txt`; canonical copies in `tests/fixtures/rdm/`).

use crate::common;

use common::*;
use soif_codecs::rdm::{QueryLanguage, RdmType, Schema, ServerDescription, TaxonomyInfo};

/// The note's documents (RFC 2655 examples) and a Harvest FILE, stored through the server.
async fn loaded(names: &[&str]) -> Server {
    let server = Server::start(names, Some(TOKEN)).await;
    let r = submit(&server, None, &fixture("rfc2655/documents.soif")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = submit(&server, None, &fixture("harvest/ecrc-93-10.soif")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    server
}

fn assert_rdm_headers(r: &Reply) {
    // "The response's entity header Content-type must be set to application/x-rdm … We
    // encourage that the response also contain the Expires and Content-length".
    assert_eq!(r.content_type(), "application/x-rdm");
    let expires = r.headers.get("expires").expect("Expires").to_str().unwrap();
    assert!(httpdate::parse_http_date(expires).is_ok(), "{expires}");
}

#[tokio::test(flavor = "multi_thread")]
async fn status_request() {
    let server = Server::start(&["catalog"], Some(TOKEN)).await;
    // "https://host:port/rdm/incoming?type=status-request"
    let r = get(&server, "type=status-request").await;
    assert_eq!(r.status, 200);
    assert_rdm_headers(&r);
    let len: usize = r.headers["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(len, r.body.len());
    assert_eq!(r.header().rdm_type, RdmType::StatusResponse);
    assert!(r.header().error_message.is_none());
    // "A status message is a HTML 2.0 document."
    let text = r.text();
    assert!(
        text.contains("}\n<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<HTML>"),
        "{text}"
    );
    assert!(text.trim_end().ends_with("</HTML>"));
    // The same as a POSTed message: "@RDMHEADER { - RDM-Version{3}: 1.0 RDM-Type{14}: status-request }"
    let headers = fixture("rdm/headers.soif");
    let first = &headers[..headers.windows(2).position(|w| w == b"}\n").unwrap() + 2];
    let r = post(&server, first.to_vec(), None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header().rdm_type, RdmType::StatusResponse);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rd_request_gatherer_scopes_and_views() {
    let server = loaded(&["techpubs"]).await;
    let csid = server.csid("techpubs");
    let head = |body: &[u8]| {
        message(
            &[
                ("RDM-Type", "rd-request"),
                ("RDM-Query-Language", "gatherer"),
                ("Catalog-Service-ID", csid.as_str()),
            ],
            body,
        )
    };
    // "@RDMQUERY { - Scope{3}: all }"
    let r = post(&server, head(&fixture("rdm/gatherer-all.soif")), None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_rdm_headers(&r);
    assert_eq!(r.header().rdm_type, RdmType::RdResponse);
    assert_eq!(r.header().catalog.unwrap().name, "techpubs");
    let all = r.objects();
    assert_eq!(all.len(), 4);
    // Values come back byte for byte.
    let expected = records(&fixture("rfc2655/documents.soif"));
    for e in &expected {
        let got = all.iter().find(|r| r.url == e.url).expect("stored");
        assert_eq!(got.attributes, e.attributes);
    }

    // The note's header as printed: "RDM-Type{9}: rd-request RDM-Query-Language{8}: gatherer
    // Catalog-Service-ID{39}: x-catalog://www.netscape.com:80/techpubs" — the catalog is
    // chosen by its name (a proxy in front of the server may have another host name).
    let headers = fixture("rdm/headers.soif");
    let second = {
        let starts: Vec<usize> = headers
            .windows(b"@RDMHEADER".len())
            .enumerate()
            .filter(|(_, w)| *w == b"@RDMHEADER")
            .map(|(i, _)| i)
            .collect();
        headers[starts[1]..starts[2]].to_vec()
    };
    let mut note = second;
    note.extend_from_slice(&fixture("rdm/gatherer-all.soif"));
    let r = post(&server, note, None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.objects().len(), 4);

    // "@RDMQUERY { - Scope{34}: since Sun, 06 Nov 1994 08:49:37 GMT }": the jpg (Last-Modified
    // 1996) and the FILE (Last-Modification-Time 774988159 = 1994-07-23) — only the jpg
    // is newer; the two pages have no date.
    let r = post(&server, head(&fixture("rdm/gatherer-since.soif")), None).await;
    assert_eq!(
        urls(&r.objects()),
        ["http://www.nissanmotors.com/1996/300ZX/pictures/300zx.jpg"]
    );

    // "Scope{x}: all View-Attributes{x}: URL,Title,Last-Modified"
    let r = post(&server, head(&fixture("rdm/gatherer-view.soif")), None).await;
    let got = r.objects();
    assert_eq!(got.len(), 4);
    for rd in &got {
        for a in &rd.attributes {
            assert!(
                ["Title", "Last-Modified"].contains(&a.name_str().as_ref()),
                "{:?}",
                a.name_str()
            );
        }
    }
    // "View-Attributes{x}: URL,Title,Author,Last-Modified View-Hits{x}: 10 View-Order{x}: Title"
    let mut q = fixture("rdm/gatherer-all.soif");
    q.truncate(q.len() - 2);
    q.extend_from_slice(b"View-Attributes{30}:\tURL,Title,Author,Last-Modified\nView-Hits{1}:\t2\nView-Order{5}:\tTitle\n}\n");
    let r = post(&server, head(&q), None).await;
    let got = r.objects();
    assert_eq!(
        urls(&got),
        [
            "http://home.netscape.com/eng/ssl3/ssl-toc.html",
            "http://home.netscape.com:80/"
        ]
    );
    // Author selects the Author-N values (RFC 2655 §3.3 multi-values).
    assert_eq!(got[0].get_str("Author-2"), Some("Philip Karlton"));
    assert!(got[0].get("Abstract").is_none());
    // View-Hits 2..3 of the same order.
    let r = get(
        &server,
        "type=rd-request&ql=gatherer&scope=all&view-order=Title&view-hits=2..3&view-attributes=url",
    )
    .await;
    assert_eq!(r.objects().len(), 2);
    assert_eq!(r.objects()[0].url_str(), "http://home.netscape.com:80/");
    assert!(r.objects()[0].attributes.is_empty());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rd_request_keyword_language_with_score() {
    let server = loaded(&["catalog"]).await;
    // "https://host:port/rdm/incoming?type=rd-request&ql=sample-keyword-ql&scope=netscape&view-hits=10"
    let r = get(
        &server,
        "type=rd-request&ql=sample-keyword-ql&scope=netscape&view-hits=10",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let hits = r.objects();
    assert_eq!(hits.len(), 2);
    assert!(hits.iter().all(|h| h.url_str().contains("netscape")));
    assert_eq!(hits[0].get_str("Score"), Some("1000"));
    let second: u32 = hits[1].get_str("Score").unwrap().parse().unwrap();
    assert!(second <= 1000);
    // "…&view-attributes=url,title,author"
    let r = get(
        &server,
        "type=rd-request&ql=sample-keyword-ql&scope=netscape&view-hits=10&view-attributes=url,title,author",
    )
    .await;
    for h in r.objects() {
        assert!(h.get("Score").is_none() && h.get("Content-Type").is_none());
        assert!(h.get("Title").is_some());
    }
    // "View-Attributes{x}: URL,Title,Author,Last-Modified,Score View-Hits{x}: 10
    //  View-Order{x}: -Score,+Title"
    let body = message(
        &[
            ("RDM-Type", "rd-request"),
            ("RDM-Query-Language", "sample-keyword-ql"),
        ],
        &{
            let mut q = b"@RDMQUERY { -\nScope{8}:\tnetscape\n".to_vec();
            let view = fixture("rdm/view-score.soif");
            q.extend_from_slice(&view[b"@RDMQUERY { -\n".len()..]);
            q
        },
    );
    let r = post(&server, body, None).await;
    let hits = r.objects();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0].get_str("Score"), Some("1000"));
    assert_eq!(hits[0].attributes.last().unwrap().name_str(), "Score");
    // Several words must all occur; OR accepts either; quotes are not syntax.
    let r = get(
        &server,
        "type=rd-request&ql=sample-keyword-ql&scope=secure+sockets",
    )
    .await;
    assert_eq!(
        urls(&r.objects()),
        ["http://home.netscape.com/eng/ssl3/ssl-toc.html"]
    );
    let r = get(
        &server,
        "type=rd-request&ql=sample-keyword-ql&scope=nissanmotors+OR+ecrc",
    )
    .await;
    assert_eq!(r.objects().len(), 2);
    let r = get(
        &server,
        "type=rd-request&ql=sample-keyword-ql&scope=%22NEAR(x",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.objects().is_empty());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn submissions_and_rd_request_deleted() {
    let server = loaded(&["catalog"]).await;
    let gone = b"@DOCUMENT { http://home.netscape.com:80/\n}\n";
    let r = post(
        &server,
        message(&[("RDM-Type", "rd-response-deleted")], gone),
        Some(TOKEN),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header().rdm_type, RdmType::StatusResponse);
    assert!(r
        .header()
        .response_interpret
        .unwrap()
        .contains("1 RDs deleted"));
    let r = get(&server, "type=rd-request&ql=gatherer&scope=all").await;
    assert_eq!(r.objects().len(), 3);
    // The deletion is remembered, with its time.
    let r = get(&server, "type=rd-request-deleted&ql=gatherer&scope=all").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let d = r.objects();
    assert_eq!(urls(&d), ["http://home.netscape.com:80/"]);
    assert_eq!(d[0].template_str(), "DOCUMENT");
    let when = d[0].get_str("Last-Modified").unwrap();
    assert!(httpdate::parse_http_date(when).is_ok(), "{when}");
    let r = get(
        &server,
        "type=rd-request-deleted&ql=gatherer&scope=since+Sun,+06+Nov+1994+08:49:37+GMT",
    )
    .await;
    assert_eq!(r.objects().len(), 1);
    let r = get(
        &server,
        "type=rd-request-deleted&ql=gatherer&scope=since+Sun,+06+Nov+2094+08:49:37+GMT",
    )
    .await;
    assert!(r.objects().is_empty());
    // Upserting it again forgets the deletion; the keyword index follows both.
    submit(&server, None, &fixture("rfc2655/documents.soif")).await;
    let r = get(&server, "type=rd-request-deleted&scope=all").await;
    assert!(r.objects().is_empty());
    let r = get(
        &server,
        "type=rd-request&ql=sample-keyword-ql&scope=welcome",
    )
    .await;
    assert_eq!(r.objects().len(), 1);
    // A record inside @DELETE { } in an rd-response deletes too.
    let envelope = b"@DELETE {\n@DOCUMENT { http://home.netscape.com:80/\n}\n}\n";
    let r = submit(&server, None, envelope).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = get(&server, "type=rd-request-deleted&scope=all").await;
    assert_eq!(r.objects().len(), 1);
    assert_eq!(r.objects()[0].action, None); // the body has no envelope; the type says it
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn server_description() {
    let server = loaded(&["wwwdvl", "other"]).await;
    let r = get(&server, "type=server-description-request").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_rdm_headers(&r);
    assert_eq!(r.header().rdm_type, RdmType::ServerDescriptionResponse);
    let objects = r.objects();
    assert_eq!(objects.len(), 1);
    // Parsing checks the required attributes: Supported-RDM-Type,
    // Supported-RDM-Query-Language, SD-Last-Modified, SD-Expires.
    let sd = ServerDescription::from_record(&objects[0]).unwrap();
    assert_eq!(sd.url.as_deref(), Some(server.csid("wwwdvl").as_str()));
    for t in [
        RdmType::RdRequest,
        RdmType::RdRequestDeleted,
        RdmType::RdResponse,
        RdmType::ServerDescriptionRequest,
        RdmType::SchemaDescriptionRequest,
        RdmType::TaxonomyDescriptionRequest,
        RdmType::StatusRequest,
    ] {
        assert!(sd.supports(t), "{t}");
    }
    assert!(sd.supports(RdmType::RdResponseDeleted), "a token is set");
    assert!(sd.supports_query_language(&QueryLanguage::Gatherer));
    assert!(sd.supports_query_language(&QueryLanguage::SampleKeyword));
    assert_eq!(sd.supported_catalogs.len(), 2);
    assert!(sd.expires > sd.last_modified);
    // "Sample-RD-*: sample RD's from the server", each a SOIF object.
    assert_eq!(sd.samples.len(), 3);
    for s in &sd.samples {
        let sample = records(s.value.as_bytes().unwrap());
        assert_eq!(sample.len(), 1);
    }
    // The other catalog, chosen by Catalog-Service-ID, is empty: no samples.
    let r = get(
        &server,
        &format!(
            "type=server-description-request&csid={}",
            server.csid("other")
        ),
    )
    .await;
    let sd = ServerDescription::from_record(&r.objects()[0]).unwrap();
    assert!(sd.samples.is_empty());
    assert_eq!(sd.url.as_deref(), Some(server.csid("other").as_str()));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn schema_description_schema_basic() {
    let schema_file = fixture_path("rdm/schema.soif");
    let schema = soif_pipeline::transforms::validate::load_schema(&schema_file).unwrap();
    let server = Server::start_with(&["catalog"], Some(TOKEN), |c| {
        c.schema = Some(schema.clone());
    })
    .await;
    // "Scope{x}: defined SOIF-Attribute": the entire schema.
    let r = post(&server, fixture("rdm/schema-basic-all.soif"), None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_rdm_headers(&r);
    assert_eq!(r.header().rdm_type, RdmType::SchemaDescriptionResponse);
    let got = Schema::from_record(&r.objects()[0]).unwrap();
    assert_eq!(got.entries, schema.entries);
    // "defined Default-View-Attribute": the note's schema has none in the default view.
    let r = post(&server, fixture("rdm/schema-basic-default-view.soif"), None).await;
    let got = Schema::from_record(&r.objects()[0]).unwrap();
    assert!(got.entries.is_empty());
    assert_eq!(got.number_of_entries, Some(0));
    // "defined Index-Attribute" picks Author; the view keeps two entry attributes.
    let r = get(
        &server,
        "type=schema-description-request&ql=schema-basic&scope=defined+Index-Attribute&view-attributes=soif-attribute,index-attribute",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let got = Schema::from_record(&r.objects()[0]).unwrap();
    assert_eq!(got.entries.len(), 1);
    assert_eq!(got.entries[0].soif_attribute, "Author");
    assert!(got.entries[0].description.is_none());
    server.stop().await;

    // Without --schema, the schema is derived from the catalog's tables.
    let server = loaded(&["catalog"]).await;
    let r = get(
        &server,
        "type=schema-description-request&scope=defined+SOIF-Attribute",
    )
    .await;
    let got = Schema::from_record(&r.objects()[0]).unwrap();
    let title = got.entry("Title").expect("Title");
    assert_eq!(title.table_name.as_deref(), Some("DOCUMENT"));
    assert!(got.entry("Embed<1>-Type").is_some());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn taxonomy_description_taxonomy_basic() {
    let server = Server::start(&["catalog"], None).await;
    let ask = |scope: &'static str| {
        message(
            &[
                ("RDM-Type", "taxonomy-description-request"),
                ("RDM-Query-Language", "taxonomy-basic"),
            ],
            &{
                let mut q = Vec::new();
                soif_codecs::soif::encode_record(
                    &soif_codecs::Record::new("RDMQUERY", "-").with("Scope", scope),
                    &mut q,
                );
                q
            },
        )
    };
    let ids = |r: &Reply| -> Vec<String> {
        let objects = r.objects();
        let info = TaxonomyInfo::from_record(&objects[0]).unwrap();
        assert_eq!(info.id, "Netscape Sample 1");
        objects[1..]
            .iter()
            .map(|c| c.get_str("Id").unwrap().to_string())
            .collect()
    };
    // "@RDMQUERY { - Scope{x}: descendant ROOT }": the entire taxonomy.
    let r = post(&server, fixture("rdm/taxonomy-basic-descendant.soif"), None).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_rdm_headers(&r);
    assert_eq!(r.header().rdm_type, RdmType::TaxonomyDescriptionResponse);
    assert_eq!(ids(&r).len(), 4);
    // "Scope{x}: anklebiter ROOT": the node and 1 directly below.
    let both = fixture("rdm/taxonomy-basic-anklebiter.soif");
    let split = both
        .windows(b"@RDMHEADER".len())
        .rposition(|w| w == b"@RDMHEADER")
        .unwrap();
    let r = post(&server, both[..split].to_vec(), None).await;
    assert_eq!(ids(&r), ["Education/Training"]);
    // "Scope{x}: anklebiter Education/Training:Internal Training Classes"
    let r = post(&server, both[split..].to_vec(), None).await;
    assert_eq!(
        ids(&r),
        [
            "Education/Training:Internal Training Classes",
            "Education/Training:Internal Training Classes:Course Descriptions",
            "Education/Training:Internal Training Classes:Schedule",
        ]
    );
    let r = post(&server, ask("children Education/Training"), None).await;
    assert_eq!(ids(&r).len(), 2);
    let r = post(&server, ask("descendant/2 ROOT"), None).await;
    assert_eq!(ids(&r).len(), 2);
    let r = post(&server, ask("descendant Education/Training"), None).await;
    assert_eq!(ids(&r).len(), 4);
    // This server has no token: its description does not offer submissions.
    let r = get(&server, "type=server-description-request").await;
    let sd = ServerDescription::from_record(&r.objects()[0]).unwrap();
    assert!(!sd.supports(RdmType::RdResponse) && !sd.supports(RdmType::RdResponseDeleted));
    assert!(sd.supports(RdmType::TaxonomyDescriptionRequest));
    assert!(sd.supports_query_language(&QueryLanguage::TaxonomyBasic));
    let r = post(&server, ask("descendant Nowhere"), None).await;
    assert_eq!(r.status, 400);
    assert!(r.header().error_message.unwrap().contains("Nowhere"));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn catalogs_by_csid() {
    let server = Server::start(&["books", "maps"], Some(TOKEN)).await;
    submit(&server, Some("maps"), &fixture("rfc2655/documents.soif")).await;
    let r = get(&server, "type=rd-request&scope=all").await;
    assert!(r.objects().is_empty(), "the default catalog is books");
    // The note: "@RDMHEADER { - RDM-Version{3}: 1.0 RDM-Type{11}: rd-response
    // RDM-Error-Message{9}: 0 results }"
    assert_eq!(r.status, 200);
    assert_eq!(r.header().rdm_type, RdmType::RdResponse);
    assert_eq!(r.header().error_message.as_deref(), Some("0 results"));
    let r = get(
        &server,
        &format!("type=rd-request&scope=all&csid={}", server.csid("maps")),
    )
    .await;
    assert_eq!(r.objects().len(), 3);
    assert_eq!(r.header().catalog.unwrap().name, "maps");
    let r = get(
        &server,
        &format!("type=rd-request&scope=all&csid={}", server.csid("atlas")),
    )
    .await;
    assert_eq!(r.status, 404);
    assert_eq!(
        r.header().error_message.as_deref(),
        Some("no catalog named \"atlas\" on this server")
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn large_results_stream_in_chunks() {
    let server = Server::start(&["catalog"], Some(TOKEN)).await;
    let mut body = Vec::new();
    for i in 0..3000 {
        soif_codecs::soif::encode_record(
            &soif_codecs::Record::new("FILE", format!("http://x/{i:05}"))
                .with("Title", format!("file number {i} of many")),
            &mut body,
        );
    }
    let r = submit(&server, None, &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = get(&server, "type=rd-request&scope=all").await;
    assert_eq!(r.status, 200);
    assert_rdm_headers(&r);
    // Not buffered to learn its length: chunked.
    assert!(r.headers.get("content-length").is_none());
    assert_eq!(r.objects().len(), 3000);
    // With a hit range, the reading stops early and the reply is small again.
    let r = get(
        &server,
        "type=rd-request&scope=all&view-hits=2991..3000&view-attributes=url",
    )
    .await;
    assert_eq!(r.objects().len(), 10);
    assert_eq!(r.objects()[0].url_str(), "http://x/02990");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_1_0_clients() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // "RDM messages can be transfered between processes across a network via HTTP/1.0":
    // a 1.0 client gets a 1.0 reply, and a streamed rd-response ends with the connection
    // (no chunked encoding, which 1.0 does not know).
    let server = Server::start(&["catalog"], Some(TOKEN)).await;
    let mut body = Vec::new();
    for i in 0..3000 {
        soif_codecs::soif::encode_record(
            &soif_codecs::Record::new("FILE", format!("http://x/{i:05}"))
                .with("Title", format!("file number {i} of many")),
            &mut body,
        );
    }
    assert_eq!(submit(&server, None, &body).await.status, 200);
    for (query, objects) in [
        ("type=status-request", 0),
        ("type=rd-request&scope=all", 3000),
    ] {
        let mut s = tokio::net::TcpStream::connect(&server.host).await.unwrap();
        s.write_all(format!("GET /rdm/incoming?{query} HTTP/1.0\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut reply = Vec::new();
        s.read_to_end(&mut reply).await.unwrap();
        let split = reply.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8_lossy(&reply[..split]).to_ascii_lowercase();
        assert!(head.starts_with("http/1.0 200"), "{head}");
        assert!(head.contains("content-type: application/x-rdm"), "{head}");
        assert!(!head.contains("chunked"), "{head}");
        let body = &reply[split + 4..];
        if objects == 0 {
            assert!(String::from_utf8_lossy(body)
                .trim_end()
                .ends_with("</HTML>"));
        } else {
            assert_eq!(records(body).len(), objects + 1);
        }
    }
    server.stop().await;
}
