//! What the web follows, over HTTP on 127.0.0.1: `/robots.txt`, the sitemaps (an index
//! past `--sitemap-size`), ResourceSync's documents. (`tests/python/test_discovery.py`
//! validates them against the official schemas and syncs with the stock client.)

use crate::common;

use common::*;

/// `catalog`: the seed documents; `other`: 10 records, lists of 4 URLs.
async fn start() -> Server {
    let server = Server::start_with(&["catalog", "other"], Some(TOKEN), |c| {
        c.sitemap_size = 4;
    })
    .await;
    let r = submit(&server, None, &fixture("rfc2655/documents.soif")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let mut many = Vec::new();
    for i in 0..10 {
        many.extend_from_slice(
            format!("@FILE {{ http://paged.example/{i:02}\nTitle{{4}}:\tT {i:02}\n}}\n").as_bytes(),
        );
    }
    let r = submit(&server, Some("other"), &many).await;
    assert_eq!(r.status, 200, "{}", r.text());
    server
}

async fn get(server: &Server, path: &str) -> (u16, String, String) {
    let r = reqwest::get(format!("{}{path}", server.base))
        .await
        .unwrap();
    let status = r.status().as_u16();
    let ctype = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, ctype, r.text().await.unwrap())
}

/// The text of every `<tag>` in `xml`.
fn all(xml: &str, tag: &str) -> Vec<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    xml.split(&open)
        .skip(1)
        .map(|s| s[..s.find(&close).unwrap()].replace("&amp;", "&"))
        .collect()
}

#[tokio::test]
async fn robots_names_each_catalogs_sitemap() {
    let server = start().await;
    let (status, ctype, text) = get(&server, "/robots.txt").await;
    assert_eq!(status, 200);
    assert!(ctype.starts_with("text/plain"), "{ctype}");
    assert!(text.starts_with("User-agent: *\n"), "{text}");
    for name in ["catalog", "other"] {
        assert!(
            text.contains(&format!("\nSitemap: {}/{name}/sitemap.xml\n", server.base)),
            "{text}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn a_sitemap_past_its_size_is_an_index_of_parts() {
    let server = start().await;
    let (status, ctype, index) = get(&server, "/other/sitemap.xml").await;
    assert_eq!(status, 200, "{index}");
    assert!(ctype.starts_with("application/xml"), "{ctype}");
    assert!(index.contains("<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">"));
    let parts = all(&index, "loc");
    // 10 records, 4 a part.
    assert_eq!(parts.len(), 3, "{index}");
    let mut pages = Vec::new();
    for (k, loc) in parts.iter().enumerate() {
        assert_eq!(
            *loc,
            format!("{}/other/sitemap.xml?part={}", server.base, k + 1)
        );
        let (status, _, part) = get(&server, &loc[server.base.len()..]).await;
        assert_eq!(status, 200, "{part}");
        assert!(part.contains("<urlset"), "{part}");
        let locs = all(&part, "loc");
        let stamps = all(&part, "lastmod");
        assert_eq!(locs.len(), stamps.len());
        assert!(
            stamps.iter().all(|s| s.len() == 20 && s.ends_with('Z')),
            "{part}"
        );
        pages.extend(locs);
    }
    let want: Vec<String> = (0..10)
        .map(|i| {
            format!(
                "{}/other/FILE/record?url=http%3A%2F%2Fpaged.example%2F{i:02}",
                server.base
            )
        })
        .collect();
    assert_eq!(pages, want);
    // Each record page is there.
    let (status, _, html) = get(&server, &pages[3][server.base.len()..]).await;
    assert_eq!(status, 200);
    assert!(html.contains("application/ld+json"), "{html}");
    for (q, code) in [("?part=4", 404), ("?part=0", 400), ("?part=x", 400)] {
        let (status, _, text) = get(&server, &format!("/other/sitemap.xml{q}")).await;
        assert_eq!(status, code, "{q}: {text}");
    }
    let (status, _, _) = get(&server, "/nosuch/sitemap.xml").await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[tokio::test]
async fn resourcesync_documents_lead_from_the_source_description_to_the_records() {
    let server = start().await;
    let b = &server.base;
    let (status, ctype, sd) = get(&server, "/.well-known/resourcesync").await;
    assert_eq!(status, 200);
    assert!(ctype.starts_with("application/xml"), "{ctype}");
    assert!(sd.contains("<rs:md capability=\"description\"/>"), "{sd}");
    assert_eq!(
        all(&sd, "loc"),
        [
            format!("{b}/catalog/capabilitylist.xml"),
            format!("{b}/other/capabilitylist.xml")
        ]
    );
    let (_, _, one) = get(&server, "/other/.well-known/resourcesync").await;
    assert_eq!(all(&one, "loc"), [format!("{b}/other/capabilitylist.xml")]);
    let (_, _, caps) = get(&server, "/other/capabilitylist.xml").await;
    assert!(caps.contains(&format!(
        "<rs:ln rel=\"up\" href=\"{b}/.well-known/resourcesync\"/>"
    )));
    assert_eq!(
        all(&caps, "loc"),
        [
            format!("{b}/other/resourcelist.xml"),
            format!("{b}/other/changelist.xml")
        ]
    );
    // 10 records, 4 a part: an index of 3 parts, each with the records' SOIF.
    let (_, _, index) = get(&server, "/other/resourcelist.xml").await;
    assert!(index.contains("<sitemapindex"), "{index}");
    assert!(
        index.contains("capability=\"resourcelist\" at=\""),
        "{index}"
    );
    let mut resources = Vec::new();
    for loc in all(&index, "loc") {
        let (status, _, part) = get(&server, &loc[b.len()..]).await;
        assert_eq!(status, 200);
        assert!(part.contains("<rs:ln rel=\"index\""), "{part}");
        resources.extend(all(&part, "loc"));
    }
    assert_eq!(resources.len(), 10);
    let (status, _, soif) = get(&server, &resources[2][b.len()..]).await;
    assert_eq!(status, 200);
    assert!(
        soif.starts_with("@FILE { http://paged.example/02\n"),
        "{soif}"
    );
    // The change list: the latest 4 changes (whole seconds), oldest first.
    let db = rusqlite::Connection::open(server.dir.path().join("other.db")).unwrap();
    for i in 0..10 {
        db.execute(
            "UPDATE FILE SET soif_datestamp = ?1 WHERE url = ?2",
            [
                format!("2001-01-01T00:00:{i:02}Z"),
                format!("http://paged.example/{i:02}"),
            ],
        )
        .unwrap();
    }
    db.execute(
        "UPDATE FILE SET soif_datestamp = '2001-01-01T00:00:06Z' WHERE url = 'http://paged.example/05'",
        [],
    )
    .unwrap();
    let (_, _, changes) = get(&server, "/other/changelist.xml").await;
    assert!(
        changes.contains("<rs:md capability=\"changelist\" from=\"2001-01-01T00:00:07Z\" until=\""),
        "{changes}"
    );
    let urls: Vec<String> = all(&changes, "loc")
        .iter()
        .map(|l| l.rsplit("%2F").next().unwrap().to_string())
        .collect();
    // The list holds 4, but 05 and 06 share a second: that second is left out whole.
    assert_eq!(urls, ["07", "08", "09"], "{changes}");
    assert!(changes.contains(
        "<lastmod>2001-01-01T00:00:09Z</lastmod><rs:md change=\"updated\" datetime=\"2001-01-01T00:00:09Z\"/>"
    ));
    let (status, _, _) = get(&server, "/nosuch/capabilitylist.xml").await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[tokio::test]
async fn an_empty_catalogs_sitemap_lists_the_catalogs_page() {
    let server = Server::start_with(&["empty"], Some(TOKEN), |_| {}).await;
    let b = &server.base;
    // The sitemaps schema wants a <url> at least: the catalog's own page.
    let (status, _, sitemap) = get(&server, "/empty/sitemap.xml").await;
    assert_eq!(status, 200, "{sitemap}");
    assert!(sitemap.contains("<urlset"), "{sitemap}");
    assert_eq!(all(&sitemap, "loc"), [format!("{b}/empty")]);
    assert!(all(&sitemap, "lastmod").is_empty(), "{sitemap}");
    let (status, _, page) = get(&server, "/empty").await;
    assert_eq!(status, 200, "{page}");
    // A resource list and a change list may be empty: they list records only.
    let (status, _, resources) = get(&server, "/empty/resourcelist.xml").await;
    assert_eq!(status, 200, "{resources}");
    assert!(resources.contains("<urlset"), "{resources}");
    assert!(!resources.contains("<url>"), "{resources}");
    let (status, _, changes) = get(&server, "/empty/changelist.xml").await;
    assert_eq!(status, 200, "{changes}");
    assert!(!changes.contains("<url>"), "{changes}");
    server.stop().await;
}
