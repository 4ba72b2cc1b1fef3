//! Facets over HTTP: counts by template, `Type`, year and host as HTML, JSON and CSV,
//! narrowing by a value on the facets, list and search pages, counts kept by
//! submissions and rebuilt after a loader wrote.

use crate::common;

use common::*;
use serde_json::{json, Value};

/// Nine records: FILE × 6 (Text × 3, HTML × 2, none × 1), DOCUMENT × 3; three hosts.
fn soif() -> Vec<u8> {
    let mut out = Vec::new();
    let rec = |template: &str, url: &str, attrs: &[(&str, &str)]| {
        let mut s = format!("@{template} {{ {url}\n");
        for (n, v) in attrs {
            s.push_str(&format!("{n}{{{}}}:\t{v}\n", v.len()));
        }
        s.push_str("}\n");
        s
    };
    for (i, (ty, date)) in [
        ("Text", "805226393"),                     // 1995
        ("Text", "Thu, 16 May 1996 11:45:39 GMT"), // 1996
        ("Text", "Sun, 06 Nov 1994 08:49:37 GMT"), // 1994
        ("HTML", "Fri, 17 May 1996 10:00:00 GMT"), // 1996
        ("HTML", ""),                              // no date
    ]
    .iter()
    .enumerate()
    {
        let mut attrs = vec![("Type", *ty)];
        if !date.is_empty() {
            attrs.push(("Last-Modified", *date));
        }
        attrs.push(("Keywords", "okapi"));
        out.extend(rec("FILE", &format!("http://a.example/{i}"), &attrs).bytes());
    }
    out.extend(rec("FILE", "http://B.example:8080/x", &[("Title", "untyped")]).bytes());
    for i in 0..3 {
        out.extend(
            rec(
                "DOCUMENT",
                &format!("http://c.example/{i}"),
                &[
                    ("Type", "HTML"),
                    ("Update-Time", "1996-03-01"),
                    ("Keywords", "okapi"),
                ],
            )
            .bytes(),
        );
    }
    out
}

/// Loads the records as `soif convert --to sqlite` does (the server is not told).
fn load(path: &std::path::Path) {
    let mut loader = soif_store::Loader::open(path, Default::default(), 100, &[]).unwrap();
    for r in records(&soif()) {
        loader.write(&r).unwrap();
    }
    loader.finish().unwrap();
}

async fn start() -> Server {
    let server = Server::start(&["catalog"], Some(TOKEN)).await;
    let r = submit(&server, None, &soif()).await;
    assert_eq!(r.status, 200, "{}", r.text());
    server
}

async fn get_json(server: &Server, path: &str) -> Value {
    let r = reqwest::get(format!("{}{path}", server.base))
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{path}");
    serde_json::from_slice(&r.bytes().await.unwrap()).expect("valid JSON")
}

async fn get_text(server: &Server, path: &str) -> (u16, String, String) {
    let r = reqwest::get(format!("{}{path}", server.base))
        .await
        .unwrap();
    let status = r.status().as_u16();
    let ct = r.headers()["content-type"].to_str().unwrap().to_string();
    (status, ct, r.text().await.unwrap())
}

/// `href="…"` as the templates write it (HTML-escaped: `/` is `&#x2f;`).
fn href_attr(url: &str) -> String {
    format!(
        "href=\"{}\"",
        url.replace('&', "&amp;").replace('/', "&#x2f;")
    )
}

/// A facet's `value → count` pairs, in order.
fn pairs(facets: &Value, name: &str) -> Vec<(Value, u64)> {
    let f = facets
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no facet {name} in {facets}"));
    f["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["value"].clone(), v["count"].as_u64().unwrap()))
        .collect()
}

#[tokio::test]
async fn counts_by_each_facet_as_json_and_csv() {
    let server = start().await;
    let j = get_json(&server, "/catalog/-/facets.json").await;
    let f = &j["facets"];
    assert_eq!(
        pairs(f, "template"),
        [(json!("FILE"), 6), (json!("DOCUMENT"), 3)]
    );
    assert_eq!(
        pairs(f, "type"),
        [(json!("HTML"), 5), (json!("Text"), 3), (Value::Null, 1)]
    );
    assert_eq!(
        pairs(f, "year"),
        [
            (json!("1996"), 5),
            (Value::Null, 2),
            (json!("1994"), 1),
            (json!("1995"), 1)
        ]
    );
    assert_eq!(
        pairs(f, "host"),
        [
            (json!("a.example"), 5),
            (json!("c.example"), 3),
            (json!("b.example"), 1)
        ]
    );
    // Top N with the rest as "other".
    let j = get_json(&server, "/catalog/-/facets.json?_facet=host&_size=1").await;
    let hosts = j["facets"].as_array().unwrap();
    assert_eq!(hosts.len(), 1);
    assert_eq!(hosts[0]["other_values"], 2);
    assert_eq!(hosts[0]["other_count"], 4);
    assert_eq!(hosts[0]["total"], 9);
    // The same as CSV, through the suffix and through _format.
    let (status, ct, csv) = get_text(&server, "/catalog/-/facets.csv?_facet=type").await;
    assert_eq!(status, 200);
    assert!(ct.starts_with("text/csv"), "{ct}");
    assert_eq!(
        csv,
        "facet,value,count,kind\ntype,HTML,5,value\ntype,Text,3,value\ntype,,1,none\n"
    );
    let (_, _, csv2) = get_text(&server, "/catalog/-/facets?_facet=host&_size=1&_format=csv").await;
    assert_eq!(
        csv2,
        "facet,value,count,kind\nhost,a.example,5,value\nhost,,4,other\n"
    );
    // Bad parameters are refused with a reason.
    for bad in [
        "_facet=colour",
        "_size=0",
        "_size=5000",
        "year=19x6",
        "_format=xml",
    ] {
        let (status, _, body) = get_text(&server, &format!("/catalog/-/facets.json?{bad}")).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_facet_value_narrows_the_counts_and_the_lists() {
    let server = start().await;
    // Facets page narrowed to Type HTML: hosts and years of those five.
    let j = get_json(&server, "/catalog/-/facets.json?type=HTML").await;
    assert_eq!(j["narrowing"], json!({"type": "HTML"}));
    assert_eq!(
        pairs(&j["facets"], "host"),
        [(json!("c.example"), 3), (json!("a.example"), 2)]
    );
    // Narrowed to the records without a year.
    let j = get_json(
        &server,
        "/catalog/-/facets.json?year__isnull=1&_facet=template",
    )
    .await;
    assert_eq!(pairs(&j["facets"], "template"), [(json!("FILE"), 2)]);
    // The template's list, narrowed: only the matching records, and its facets.
    let j = get_json(&server, "/catalog/FILE.json?type=Text&year=1996").await;
    let urls: Vec<&str> = j["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect();
    assert_eq!(urls, ["http://a.example/1"]);
    assert!(
        j["facets"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["name"] != "template"),
        "a template's list has no template facet"
    );
    assert_eq!(pairs(&j["facets"], "host"), [(json!("a.example"), 1)]);
    // Clicking a value: its toggle URL is the narrowed page, and the selected value's
    // toggle URL removes the narrowing again.
    let j = get_json(&server, "/catalog/FILE.json").await;
    let text = j["facets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "type")
        .unwrap()["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["value"] == "Text")
        .unwrap()
        .clone();
    let href = text["toggle_url"].as_str().unwrap();
    assert_eq!(href, "/catalog/FILE.json?type=Text");
    let narrowed = get_json(&server, href).await;
    assert_eq!(narrowed["rows"].as_array().unwrap().len(), 3);
    let sel = pairs(&narrowed["facets"], "type");
    assert_eq!(sel, [(json!("Text"), 3)]);
    let back = narrowed["facets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "type")
        .unwrap()["results"][0]
        .clone();
    assert_eq!(back["selected"], true);
    assert_eq!(back["toggle_url"], "/catalog/FILE.json");
    // Search without keywords: the narrowing over every template.
    let j = get_json(&server, "/catalog/-/search.json?host=c.example").await;
    assert_eq!(j["rows"].as_array().unwrap().len(), 3);
    assert_eq!(pairs(&j["facets"], "template"), [(json!("DOCUMENT"), 3)]);
    // Search with keywords: the hits narrowed, their facets counted from the hits.
    let j = get_json(&server, "/catalog/-/search.json?q=okapi&type=HTML").await;
    assert_eq!(j["rows"].as_array().unwrap().len(), 5);
    let t = &j["facets"].as_array().unwrap()[0];
    assert_eq!(t["complete"], true);
    assert_eq!(
        pairs(&j["facets"], "host"),
        [(json!("c.example"), 3), (json!("a.example"), 2)]
    );
    // The HTML list shows the facets with links that narrow.
    let (status, _, html) = get_text(&server, "/catalog/FILE").await;
    assert_eq!(status, 200);
    assert!(html.contains("class=\"facets\""), "{html}");
    assert!(
        html.contains(&href_attr("/catalog/FILE?type=Text")),
        "{html}"
    );
    assert!(
        html.contains(&href_attr("/catalog/FILE?type__isnull=1")),
        "{html}"
    );
    let (status, _, html) = get_text(&server, "/catalog/-/facets?type=Text").await;
    assert_eq!(status, 200);
    assert!(
        html.contains(&href_attr("/catalog/-/search?type=Text")),
        "{html}"
    );
    server.stop().await;
}

#[tokio::test]
async fn submissions_keep_the_counts() {
    let server = start().await;
    // One FILE record changes its Type; one DOCUMENT is deleted.
    let r = submit(
        &server,
        None,
        b"@FILE { http://a.example/0\nType{4}:\tHTML\n}\n@DELETE {\n@DOCUMENT { http://c.example/0\n}\n}\n",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let j = get_json(&server, "/catalog/-/facets.json").await;
    assert_eq!(
        pairs(&j["facets"], "type"),
        [(json!("HTML"), 5), (json!("Text"), 2), (Value::Null, 1)]
    );
    assert_eq!(
        pairs(&j["facets"], "template"),
        [(json!("FILE"), 6), (json!("DOCUMENT"), 2)]
    );
    server.stop().await;
}

#[tokio::test]
async fn a_loaded_catalog_gets_its_facets() {
    // A catalog written by a loader (the sqlite sink) before the server starts.
    let server = Server::start_with(&["loaded"], None, |config| load(&config.catalogs[0].1)).await;
    // The facet tables are built in the background at start; until then the facets
    // page answers 503 (Retry-After) and the lists show no facets.
    let mut tries = 0;
    let j = loop {
        let r = reqwest::get(format!(
            "{}/loaded/-/facets.json?_facet=template",
            server.base
        ))
        .await
        .unwrap();
        if r.status() == 200 {
            break serde_json::from_slice::<Value>(&r.bytes().await.unwrap()).unwrap();
        }
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()["retry-after"], "1");
        tries += 1;
        assert!(tries < 300, "the facet tables were never built");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(
        pairs(&j["facets"], "template"),
        [(json!("FILE"), 6), (json!("DOCUMENT"), 3)]
    );
    server.stop().await;
}

#[tokio::test]
async fn a_read_only_catalog_without_facet_tables_shows_none() {
    let server = Server::start_with(&["plain"], None, |config| {
        load(&config.catalogs[0].1);
        config.read_only = true;
    })
    .await;
    // The list is served, without facets; a narrowing is refused for now (503).
    let j = get_json(&server, "/plain/FILE.json").await;
    assert_eq!(j["facets"], Value::Null);
    assert_eq!(j["rows"].as_array().unwrap().len(), 6);
    let (status, _, body) = get_text(&server, "/plain/FILE.json?type=Text").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("served read-only"), "{body}");
    let (status, _, _) = get_text(&server, "/plain/-/facets.json").await;
    assert_eq!(status, 503);
    // A search narrowing reads the records instead.
    let j = get_json(&server, "/plain/-/search.json?template=FILE").await;
    assert_eq!(j["rows"].as_array().unwrap().len(), 6);
    server.stop().await;
}

#[tokio::test]
async fn the_search_form_keeps_the_narrowing() {
    let server = start().await;
    let (_, _, html) = get_text(
        &server,
        "/catalog/-/search?q=okapi&type=HTML&year__isnull=1",
    )
    .await;
    assert!(
        html.contains("<input type=\"hidden\" name=\"type\" value=\"HTML\">"),
        "{html}"
    );
    assert!(
        html.contains("<input type=\"hidden\" name=\"year__isnull\" value=\"1\">"),
        "{html}"
    );
    let (_, _, html) = get_text(&server, "/catalog").await;
    assert!(html.contains(&href_attr("/catalog/-/facets")), "{html}");
    server.stop().await;
}
