//! OAI-PMH over HTTP on 127.0.0.1: every verb, the errors, resumption, sets, dates,
//! deletions, hostile bytes. (The pytest suite in `tests/python/` validates the responses
//! against the official schemas and harvests with stock clients.)

use crate::common;

use common::*;
use soif_codecs::oai::ids;
use soif_codecs::Record;
use soif_store::SqliteStore;

const REPO: &str = "soif.example.org";

async fn start(page: usize) -> Server {
    Server::start_with(&["catalog", "other"], Some(TOKEN), |c| {
        c.oai.page_size = page;
        c.oai.repository_id = Some(REPO.into());
        c.oai.admin_email = vec!["librarian@example.org".into()];
    })
    .await
}

async fn oai(server: &Server, query: &str) -> String {
    let r = reqwest::get(format!("{}/oai?{query}", server.base))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "text/xml; charset=utf-8"
    );
    let text = r.text().await.unwrap();
    well_formed(&text);
    text
}

async fn oai_post(server: &Server, path: &str, form: &str) -> String {
    let r = reqwest::Client::new()
        .post(format!("{}{path}", server.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    well_formed(&text);
    text
}

fn well_formed(xml: &str) {
    let mut reader = quick_xml::Reader::from_str(xml);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("not well-formed: {e}\n{xml}"),
        }
    }
}

fn error_code(xml: &str) -> Option<&str> {
    let i = xml.find("<error code=\"")? + 13;
    xml[i..].split('"').next()
}

/// The `<request …>` element.
fn request_element(xml: &str) -> &str {
    let i = xml.find("<request").unwrap();
    &xml[i..i + xml[i..].find("</request>").unwrap()]
}

fn token_of(xml: &str) -> Option<String> {
    let i = xml.find("<resumptionToken")?;
    let rest = &xml[i..];
    if rest[..rest.find('>')?].ends_with('/') {
        return Some(String::new());
    }
    let s = rest.find('>')? + 1;
    Some(rest[s..s + rest[s..].find('<')?].to_string())
}

async fn fill(server: &Server) {
    let mut body = fixture("rfc2655/documents.soif");
    body.extend(fixture("harvest/ecrc-93-10.soif"));
    let r = submit(server, None, &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

fn store(server: &Server) -> SqliteStore {
    SqliteStore::open(&server.dir.path().join("catalog.db")).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn identify_formats_sets_and_the_schema() {
    let server = start(100).await;
    fill(&server).await;
    let x = oai(&server, "verb=Identify").await;
    for needle in [
        &format!("<baseURL>{}/oai</baseURL>", server.base),
        "<protocolVersion>2.0</protocolVersion>",
        "<adminEmail>librarian@example.org</adminEmail>",
        "<deletedRecord>persistent</deletedRecord>",
        "<granularity>YYYY-MM-DDThh:mm:ssZ</granularity>",
        "<repositoryIdentifier>soif.example.org</repositoryIdentifier>",
        "<earliestDatestamp>",
        "<request verb=\"Identify\">",
    ] {
        assert!(x.contains(needle), "{needle}\n{x}");
    }
    // The second catalog is a repository of its own.
    let r = reqwest::get(format!("{}/oai/other?verb=Identify", server.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        r.contains("<repositoryIdentifier>other.soif.example.org</repositoryIdentifier>"),
        "{r}"
    );
    assert!(r.contains(&format!("<baseURL>{}/oai/other</baseURL>", server.base)));
    let f = oai(&server, "verb=ListMetadataFormats").await;
    assert!(
        f.contains("<metadataPrefix>oai_dc</metadataPrefix>")
            && f.contains("<metadataPrefix>soif</metadataPrefix>")
    );
    assert!(f.contains(&format!("<schema>{}/oai/soif.xsd</schema>", server.base)));
    let s = oai(&server, "verb=ListSets").await;
    assert!(
        s.contains("<setSpec>DOCUMENT</setSpec>") && s.contains("<setSpec>FILE</setSpec>"),
        "{s}"
    );
    let xsd = reqwest::get(format!("{}/oai/soif.xsd", server.base))
        .await
        .unwrap();
    assert_eq!(xsd.status(), 200);
    assert!(xsd
        .text()
        .await
        .unwrap()
        .contains("targetNamespace=\"urn:x-soif:record:1\""));
    // An unknown catalog is no repository.
    let r = reqwest::get(format!("{}/oai/nope?verb=Identify", server.base))
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_resume_statelessly_by_get_and_post() {
    let server = start(2).await;
    fill(&server).await;
    // 4 records (3 DOCUMENT, 1 FILE): pages of 2.
    let first = oai(&server, "verb=ListIdentifiers&metadataPrefix=oai_dc").await;
    assert!(
        first.contains("completeListSize=\"4\" cursor=\"0\""),
        "{first}"
    );
    assert!(first.contains("expirationDate=\""));
    let mut token = token_of(&first).unwrap();
    let mut seen = first.matches("<header>").count();
    let mut pages = 1;
    while !token.is_empty() {
        // POST too: the same token works either way.
        let next = oai_post(
            &server,
            "/oai",
            &format!("verb=ListIdentifiers&resumptionToken={token}"),
        )
        .await;
        assert!(
            next.contains(&format!("cursor=\"{}\"", 2 * pages)),
            "{next}"
        );
        assert!(request_element(&next).contains("resumptionToken="));
        seen += next.matches("<header>").count();
        token = token_of(&next).unwrap();
        pages += 1;
    }
    assert_eq!((seen, pages), (4, 2));
    // A complete list has no token at all.
    let all = oai(&server, "verb=ListRecords&metadataPrefix=oai_dc&set=FILE").await;
    assert!(token_of(&all).is_none(), "{all}");
    assert!(all.contains("<dc:identifier>ftp://ecrc.de/pub/ECRC_tech_reports/reports/ECRC-93-10.ps.Z</dc:identifier>"), "{all}");
    // A token from another verb, altered, or garbage: badResumptionToken.
    let other = oai(
        &server,
        &format!(
            "verb=ListRecords&resumptionToken={}",
            token_of(&first).unwrap()
        ),
    )
    .await;
    assert_eq!(error_code(&other), Some("badResumptionToken"));
    let mut t = token_of(&first).unwrap();
    t.insert(5, 'x');
    let bad = oai(
        &server,
        &format!("verb=ListIdentifiers&resumptionToken={t}"),
    )
    .await;
    assert_eq!(error_code(&bad), Some("badResumptionToken"));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_error_condition_and_the_request_element() {
    let server = start(100).await;
    let empty = oai(&server, "verb=ListSets").await;
    assert_eq!(error_code(&empty), Some("noSetHierarchy"));
    let nothing = oai(&server, "verb=ListRecords&metadataPrefix=oai_dc").await;
    assert_eq!(error_code(&nothing), Some("noRecordsMatch"));
    fill(&server).await;
    let bare = |x: &str| request_element(x).starts_with("<request>");
    for (q, code, is_bare) in [
        ("", "badVerb", true),
        ("verb=Frobnicate", "badVerb", true),
        ("verb=Identify&verb=Identify", "badVerb", true),
        ("verb=Identify&extra=1", "badArgument", true),
        ("verb=ListRecords", "badArgument", true),
        ("verb=ListRecords&metadataPrefix=oai_dc&metadataPrefix=soif", "badArgument", true),
        ("verb=ListRecords&metadataPrefix=oai_dc&resumptionToken=x", "badArgument", true),
        ("verb=ListRecords&metadataPrefix=oai_dc&from=2002-01-01&until=2001-01-01", "badArgument", true),
        ("verb=ListRecords&metadataPrefix=oai_dc&from=2001-01-01&until=2002-01-01T00:00:00Z", "badArgument", true),
        ("verb=ListRecords&metadataPrefix=oai_dc&from=yesterday", "badArgument", true),
        ("verb=GetRecord&metadataPrefix=oai_dc", "badArgument", true),
        ("verb=ListRecords&metadataPrefix=marc21", "cannotDisseminateFormat", false),
        ("verb=GetRecord&metadataPrefix=oai_dc&identifier=oai:soif.example.org:FILE/http://nowhere/", "idDoesNotExist", false),
        ("verb=GetRecord&metadataPrefix=oai_dc&identifier=oai:elsewhere.org:FILE/x", "idDoesNotExist", false),
        ("verb=ListMetadataFormats&identifier=oai:soif.example.org:FILE/nope", "idDoesNotExist", false),
        ("verb=ListRecords&metadataPrefix=oai_dc&set=NOSUCH", "noRecordsMatch", false),
        ("verb=ListRecords&metadataPrefix=oai_dc&until=1990-01-01", "noRecordsMatch", false),
        ("verb=ListIdentifiers&resumptionToken=v1.AAAA.BBBB", "badResumptionToken", false),
        ("verb=ListSets&resumptionToken=anything", "badResumptionToken", false),
    ] {
        let x = oai(&server, q).await;
        assert_eq!(error_code(&x), Some(code), "{q}\n{x}");
        assert_eq!(bare(&x), is_bare, "{q}: {}", request_element(&x));
    }
    // POST with another content type is refused by HTTP, not by the protocol.
    let r = reqwest::Client::new()
        .post(format!("{}/oai", server.base))
        .body("verb=Identify")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 415);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deletions_dates_and_records_coming_back() {
    let server = start(100).await;
    fill(&server).await;
    let url = "http://home.netscape.com:80/";
    let id = ids::identifier(REPO, b"DOCUMENT", url.as_bytes());
    {
        let mut s = store(&server);
        s.delete(Some(b"DOCUMENT"), url.as_bytes()).unwrap();
        // An old record, to test the dates.
        s.connection()
            .execute(
                "UPDATE FILE SET soif_datestamp = '1999-12-31T23:59:59Z'",
                [],
            )
            .unwrap();
    }
    let g = oai(
        &server,
        &format!("verb=GetRecord&metadataPrefix=soif&identifier={id}"),
    )
    .await;
    assert!(g.contains("<header status=\"deleted\">"), "{g}");
    assert!(!g.contains("<metadata>"));
    let l = oai(
        &server,
        "verb=ListIdentifiers&metadataPrefix=oai_dc&set=DOCUMENT",
    )
    .await;
    assert_eq!(l.matches("status=\"deleted\"").count(), 1);
    // Inclusive bounds, both granularities.
    for q in [
        "until=1999-12-31",
        "until=1999-12-31T23:59:59Z",
        "from=1999-12-31T23:59:59Z&until=1999-12-31T23:59:59Z",
        "from=1999-12-31&until=1999-12-31",
    ] {
        let x = oai(
            &server,
            &format!("verb=ListIdentifiers&metadataPrefix=oai_dc&{q}"),
        )
        .await;
        assert_eq!(x.matches("<header").count(), 1, "{q}\n{x}");
        assert!(x.contains("<datestamp>1999-12-31T23:59:59Z</datestamp>"));
    }
    let x = oai(
        &server,
        "verb=ListIdentifiers&metadataPrefix=oai_dc&from=2000-01-01",
    )
    .await;
    assert_eq!(x.matches("<header").count(), 3, "{x}");
    // Loaded again: live again, with its metadata.
    let again = Record::new("DOCUMENT", url).with("Title", "Back");
    store(&server).upsert(&again).unwrap();
    let g = oai(
        &server,
        &format!("verb=GetRecord&metadataPrefix=oai_dc&identifier={id}"),
    )
    .await;
    assert!(
        !g.contains("status=\"deleted\"") && g.contains("<dc:title>Back</dc:title>"),
        "{g}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_bytes_stay_valid_xml_and_soif_keeps_them() {
    let server = start(100).await;
    let template = b"Odd<&>\xff";
    let url = b"http://x/\x01a b\"<>\xe9";
    let r = Record::new(&template[..], &url[..])
        .with("Title", "ctl \u{1} bell \u{7} <b>&amp;</b>\r\nline")
        .with("Bin", vec![0u8, 0xff, 0xfe, 0x80])
        .with("Na\tme", "v");
    store(&server).upsert(&r).unwrap();
    let id = ids::identifier(REPO, template, url);
    let dc = oai(
        &server,
        &format!(
            "verb=GetRecord&metadataPrefix=oai_dc&identifier={}",
            urlencode(&id)
        ),
    )
    .await;
    assert!(dc.contains("<dc:title>ctl \u{fffd} bell \u{fffd} &lt;b&gt;&amp;amp;&lt;/b&gt;&#13;\nline</dc:title>"), "{dc}");
    let so = oai(
        &server,
        &format!(
            "verb=GetRecord&metadataPrefix=soif&identifier={}",
            urlencode(&id)
        ),
    )
    .await;
    assert!(so.contains("template-base64=\"T2RkPCY+/w==\""), "{so}");
    assert!(
        so.contains("<soif:attribute name=\"Bin\" encoding=\"base64\">AP/+gA==</soif:attribute>"),
        "{so}"
    );
    assert!(so.contains("name-base64=\"TmEJbWU=\""), "{so}");
    let sets = oai(&server, "verb=ListSets").await;
    assert!(
        sets.contains("<setSpec>Odd~3C~26~3E~FF</setSpec>"),
        "{sets}"
    );
    server.stop().await;
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
