//! The browse and search pages over HTTP on 127.0.0.1: pages, JSON forms, escaping of
//! hostile values, security headers, paging, 404s. (`tests/python/test_browse.py` drives
//! headless Chromium through the same pages.)

use crate::common;

use common::*;
use oxrdf::Triple;
use soif_sinks::rdf::mapping::Mapping;
use std::collections::HashSet;

async fn start() -> Server {
    let server = Server::start(&["catalog", "other"], Some(TOKEN)).await;
    let r = submit(&server, None, &fixture("web/hostile.soif")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = submit(&server, None, &fixture("rfc2655/documents.soif")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let mut many = Vec::new();
    for i in 0..60 {
        let title = format!("Paged record {i:02}");
        many.extend_from_slice(
            format!(
                "@FILE {{ http://paged.example/{i:02}\nTitle{{{}}}:\t{title}\nKeywords{{5}}:\tpaged\n}}\n",
                title.len()
            )
            .as_bytes(),
        );
    }
    let r = submit(&server, Some("other"), &many).await;
    assert_eq!(r.status, 200, "{}", r.text());
    server
}

struct Page {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Vec<u8>,
}

impl Page {
    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("pages are UTF-8")
    }
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("valid JSON")
    }
}

/// The JSON-LD a record page embeds.
fn jsonld(html: &str) -> serde_json::Value {
    let open = "<script type=\"application/ld+json\">";
    let start = html.find(open).expect("a JSON-LD script") + open.len();
    let len = html[start..].find("</script>").expect("its end");
    serde_json::from_str(&html[start..start + len]).expect("JSON")
}

async fn page(server: &Server, path: &str) -> Page {
    let r = reqwest::get(format!("{}{path}", server.base))
        .await
        .unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let body = r.bytes().await.unwrap().to_vec();
    // Every page and download carries the security headers.
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'none'"), "{path}: {csp}");
    assert!(!csp.contains("script-src"), "{path}: {csp}");
    assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
    Page {
        status,
        headers,
        body,
    }
}

const HOSTILE: &str = "/catalog/DOCUMENT/record?url=http%3A%2F%2Fhostile.example%2Fxss";

#[tokio::test]
async fn home_lists_catalogs_templates_counts_and_load() {
    let server = start().await;
    let p = page(&server, "/").await;
    assert_eq!(p.status, 200);
    assert!(p.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let html = p.text();
    assert!(html.contains("<h1>Catalogs</h1>"), "{html}");
    assert!(html.contains(">catalog</a>") && html.contains(">other</a>"));
    assert!(
        html.contains("<label for=\"c1-q\">Keywords</label>"),
        "{html}"
    );
    assert!(html.contains("<label for=\"c2-q\">"), "ids differ per form");
    let j = page(&server, "/.json").await.json();
    let cats = j["catalogs"].as_array().unwrap();
    assert_eq!(cats[0]["name"], "catalog");
    let other = &cats[1]["templates"][0];
    assert_eq!(other["template"], "FILE");
    assert_eq!(other["records"], 60);
    let one = page(&server, "/other.json").await.json();
    assert_eq!(one["templates"][0]["records"], 60);
    let css = page(&server, "/-/style.css").await;
    assert!(css.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/css"));
    server.stop().await;
}

#[tokio::test]
async fn hostile_values_are_escaped_and_never_links() {
    let server = start().await;
    let p = page(&server, HOSTILE).await;
    assert_eq!(p.status, 200);
    let html = p.text();
    // The page's one <script> is its JSON-LD (data, never run); a value's would be
    // another: none gets through, and none ends the JSON-LD early.
    let lower = html.to_ascii_lowercase();
    assert_eq!(lower.matches("<script").count(), 1, "{html}");
    assert_eq!(lower.matches("</script").count(), 1, "{html}");
    let ld = jsonld(&html);
    assert!(
        ld["name"].as_str().unwrap().contains("<script>alert("),
        "{ld}"
    );
    assert_eq!(ld["@id"], "http://hostile.example/xss");
    assert!(!html.contains("<img"), "{html}");
    assert!(html.contains("&lt;script&gt;alert("), "{html}");
    // javascript: values are text, never href.
    assert!(
        !html.to_ascii_lowercase().contains("href=\"javascript"),
        "{html}"
    );
    assert!(html.contains("javascript:alert("), "{html}");
    // An https value is a link, its quote escaped inside the attribute.
    assert!(
        html.contains("href=\"https:&#x2f;&#x2f;example.org&#x2f;&quot;&gt;"),
        "{html}"
    );
    // Lists and Embed parts are grouped as collapse groups them.
    assert!(
        html.contains("<dt>Author <span class=\"muted\">(2)</span></dt>"),
        "{html}"
    );
    assert!(html.contains("<legend>Embed&lt;1&gt;</legend>"), "{html}");
    assert!(html.contains("<legend>Embed&lt;2&gt;</legend>"), "{html}");
    // Non-UTF-8 text is shown by size, downloadable byte for byte.
    assert!(html.contains("binary value, 10 bytes"), "{html}");
    assert!(html.contains("binary value, 6 bytes"), "{html}");
    // Long values are folded.
    assert!(html.contains("<details><summary>long line"), "{html}");
    let at = html.find("record.value?").unwrap();
    let href = &html[html[..at].rfind("href=\"").unwrap() + 6..];
    let href = href[..href.find('"').unwrap()]
        .replace("&#x2f;", "/")
        .replace("&amp;", "&");
    let v = page(&server, &href).await;
    assert_eq!(v.status, 200);
    assert_eq!(v.body, b"\x00\xff\xfe\x80binary");
    assert_eq!(v.headers["content-type"], "application/octet-stream");
    // A record whose own URL is javascript: is shown, not linked.
    let js = page(
        &server,
        "/catalog/DOCUMENT/record?url=javascript%3Aalert%28%27url%27%29",
    )
    .await;
    assert_eq!(js.status, 200);
    assert!(js
        .text()
        .contains("<code>javascript:alert(&#x27;url&#x27;)</code>"));
    server.stop().await;
}

#[tokio::test]
async fn record_downloads() {
    let server = start().await;
    let soif = page(&server, &HOSTILE.replace("/record?", "/record.soif?")).await;
    assert_eq!(soif.status, 200);
    assert!(soif
        .body
        .starts_with(b"@DOCUMENT { http://hostile.example/xss\n"));
    assert_eq!(
        records(&soif.body)[0].attributes.len(),
        records(&fixture("web/hostile.soif"))[0].attributes.len()
    );
    let json = page(&server, &HOSTILE.replace("/record?", "/record.json?")).await;
    let j = json.json();
    assert_eq!(j["url"], "http://hostile.example/xss");
    assert_eq!(j["attributes"]["Author"][1], "Eve");
    assert!(j["attributes"]["Latin"]["base64"].is_string());
    assert!(j["attributes"]["Embed"][0]["Data"]["base64"].is_string());
    // RDF/XML of the one mapping: the graph `soif convert --to rdfxml` writes.
    let rdf = page(&server, &HOSTILE.replace("/record?", "/record.rdf?")).await;
    assert_eq!(rdf.status, 200);
    let served: HashSet<Triple> = oxrdfio::RdfParser::from_format(oxrdfio::RdfFormat::RdfXml)
        .for_slice(&rdf.body)
        .map(|q| {
            let q = q.unwrap_or_else(|e| panic!("{e}: {}", rdf.text()));
            Triple::new(q.subject, q.predicate, q.object)
        })
        .collect();
    let record = &records(&fixture("web/hostile.soif"))[0];
    let mapped: HashSet<Triple> = Mapping::new().triples(record).1.into_iter().collect();
    assert_eq!(served, mapped);
    assert!(served
        .iter()
        .any(|t| t.predicate.as_str() == "http://purl.org/dc/terms/title"
            && t.object.to_string().contains("<script>")));
    let html = page(&server, HOSTILE).await.text();
    assert!(html.contains("verb=GetRecord&amp;metadataPrefix=oai_dc&amp;identifier=oai%3A"));
    server.stop().await;
}

#[tokio::test]
async fn search_keywords_match_since_and_paging() {
    let server = start().await;
    let p = page(&server, "/catalog/-/search?q=hostile").await;
    assert_eq!(p.status, 200);
    let html = p.text();
    assert!(html.contains("<th scope=\"col\">Score</th>") && html.contains("<td>1000</td>"));
    assert!(
        html.contains("value=\"hostile\""),
        "the form keeps the query"
    );
    let j = page(&server, "/catalog/-/search.json?q=hostile")
        .await
        .json();
    assert_eq!(j["rows"].as_array().unwrap().len(), 2);
    // RFC 2655 Attr=value: name case-insensitive, value a substring.
    let j = page(&server, "/catalog/-/search.json?match=author%3DEVE")
        .await
        .json();
    assert_eq!(j["rows"].as_array().unwrap().len(), 1);
    assert_eq!(j["rows"][0]["url"], "http://hostile.example/xss");
    let j = page(&server, "/catalog/-/search.json?since=2100-01-01")
        .await
        .json();
    assert_eq!(j["rows"].as_array().unwrap().len(), 0);
    let bad = page(&server, "/catalog/-/search?since=yesterday-ish").await;
    assert_eq!(bad.status, 400);
    // Paging: 60 records, 25 a page.
    let j = page(&server, "/other/-/search.json?q=paged&page=3")
        .await
        .json();
    assert_eq!(j["rows"].as_array().unwrap().len(), 10);
    assert!(j["next"].is_null());
    assert!(j["previous"].as_str().unwrap().contains("page=2"));
    let p1 = page(&server, "/other/FILE").await.text();
    assert!(p1.contains("Records 1–25 (more follow)"), "{p1}");
    assert!(p1.contains("rel=\"next\""));
    let j = page(&server, "/other/FILE.json?page=2").await.json();
    assert_eq!(j["rows"][0]["n"], 26);
    assert_eq!(j["rows"][0]["url"], "http://paged.example/25");
    assert_eq!(page(&server, "/other/FILE?page=0").await.status, 400);
    assert_eq!(page(&server, "/other/FILE?page=x").await.status, 400);
    server.stop().await;
}

#[tokio::test]
async fn non_utf8_url_round_trips_through_links() {
    let server = start().await;
    let rd = b"@FILE { http://bytes.example/caf\xe9\xff\nTitle{9}:\tLatin \xe9\xff!\n}\n";
    let r = submit(&server, None, rd).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let list = page(&server, "/catalog/FILE").await.text();
    // The URL is shown with U+FFFD, linked with its exact bytes.
    assert!(
        list.contains("http:&#x2f;&#x2f;bytes.example&#x2f;caf\u{fffd}\u{fffd}"),
        "{list}"
    );
    assert!(
        list.contains("record?url=http%3A%2F%2Fbytes.example%2Fcaf%E9%FF"),
        "{list}"
    );
    let rec = page(
        &server,
        "/catalog/FILE/record?url=http%3A%2F%2Fbytes.example%2Fcaf%E9%FF",
    )
    .await;
    assert_eq!(rec.status, 200);
    assert!(rec.text().contains("binary value, 9 bytes"));
    let soif = page(
        &server,
        "/catalog/FILE/record.soif?url=http%3A%2F%2Fbytes.example%2Fcaf%E9%FF",
    )
    .await;
    assert_eq!(soif.body, rd.to_vec());
    let j = page(
        &server,
        "/catalog/FILE/record.json?url=http%3A%2F%2Fbytes.example%2Fcaf%E9%FF",
    )
    .await
    .json();
    assert!(j["url"]["base64"].is_string());
    server.stop().await;
}

#[tokio::test]
async fn not_found_and_read_only() {
    let server = start().await;
    for path in [
        "/nope",
        "/nope.json",
        "/catalog/NOPE",
        "/catalog/DOCUMENT/record?url=http%3A%2F%2Fmissing.example%2F",
        "/catalog/DOCUMENT/elsewhere?url=x",
        "/catalog/-/nope",
    ] {
        let p = page(&server, path).await;
        assert_eq!(p.status, 404, "{path}");
    }
    let j = page(&server, "/nope.json").await.json();
    assert_eq!(j["status"], 404);
    let r = reqwest::Client::new()
        .post(format!("{}/catalog", server.base))
        .body("x")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    server.stop().await;
}

#[tokio::test]
async fn pages_take_read_slots() {
    let server = Server::start_with(&["catalog"], None, |c| c.max_reads_per_client = 0).await;
    let p = page(&server, "/").await;
    assert_eq!(p.status, 429);
    assert!(p.headers.contains_key("retry-after"));
    // The stylesheet reads no catalog.
    assert_eq!(page(&server, "/-/style.css").await.status, 200);
    server.stop().await;
}
