//! A server on 127.0.0.1 (port chosen at run time) and small HTTP helpers.
#![allow(dead_code)]

use reqwest::StatusCode;
use soif_codecs::rdm::RdmHeader;
use soif_codecs::soif::{decode_all, encode_record, DecoderOptions};
use soif_codecs::Record;
use soif_server::config::{load_taxonomy, ServerConfig};
use soif_server::state::AppState;
use std::path::PathBuf;

pub const TOKEN: &str = "s3cret-token";

pub fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{}/../tests/fixtures/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

pub fn fixture_path(path: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/../tests/fixtures/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

pub fn records(bytes: &[u8]) -> Vec<Record> {
    decode_all(bytes, DecoderOptions::default())
        .into_iter()
        .map(|r| r.expect("valid SOIF"))
        .collect()
}

pub struct Server {
    pub base: String,
    pub endpoint: String,
    pub host: String,
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Server {
    /// Catalogs `names` (the first is the default), the note's schema and taxonomy.
    pub async fn start(names: &[&str], token: Option<&str>) -> Server {
        Server::start_with(names, token, |_| {}).await
    }

    pub async fn start_with(
        names: &[&str],
        token: Option<&str>,
        tune: impl FnOnce(&mut ServerConfig),
    ) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut config = ServerConfig {
            catalogs: names
                .iter()
                .map(|n| (n.to_string(), dir.path().join(format!("{n}.db"))))
                .collect(),
            token: token.map(str::to_string),
            taxonomy: Some(load_taxonomy(&fixture_path("rdm/taxonomy.soif")).unwrap()),
            ..ServerConfig::default()
        };
        tune(&mut config);
        let state = tokio::task::spawn_blocking(move || AppState::open(config))
            .await
            .unwrap()
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(soif_server::serve(listener, state, async move {
            let _ = stopped.await;
        }));
        Server {
            base: format!("http://{addr}"),
            endpoint: format!("http://{addr}/rdm/incoming"),
            host: addr.to_string(),
            dir,
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub fn csid(&self, name: &str) -> String {
        format!("x-catalog://{}/{name}", self.host)
    }

    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            t.await.unwrap().unwrap();
        }
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    /// The reply's header (the first object).
    pub fn header(&self) -> RdmHeader {
        // The first object; an HTML status document after it does not decode, and need not.
        let first = decode_all(&self.body, DecoderOptions::default())
            .into_iter()
            .next()
            .expect("an @RDMHEADER")
            .expect("a valid @RDMHEADER");
        RdmHeader::from_record(&first).unwrap()
    }

    /// Every object after the header (for SOIF bodies).
    pub fn objects(&self) -> Vec<Record> {
        let mut all = records(&self.body);
        all.remove(0);
        all
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

async fn reply(resp: reqwest::Response) -> Reply {
    Reply {
        status: resp.status(),
        headers: resp.headers().clone(),
        body: resp.bytes().await.unwrap().to_vec(),
    }
}

pub async fn get(server: &Server, query: &str) -> Reply {
    let resp = reqwest::get(format!("{}?{query}", server.endpoint))
        .await
        .unwrap();
    reply(resp).await
}

pub async fn post(server: &Server, body: Vec<u8>, token: Option<&str>) -> Reply {
    let mut req = reqwest::Client::new()
        .post(&server.endpoint)
        .header("content-type", "application/x-rdm")
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    reply(req.send().await.unwrap()).await
}

/// An RDM message: `header` attributes (RDM-Version 1.0 added), then `body` bytes.
pub fn message(header: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut h = Record::new("RDMHEADER", "-").with("RDM-Version", "1.0");
    for (k, v) in header {
        h.push(k, *v);
    }
    let mut out = Vec::new();
    encode_record(&h, &mut out);
    out.extend_from_slice(body);
    out
}

/// Stores `bytes` (SOIF RDs) in `catalog` with an rd-response.
pub async fn submit(server: &Server, catalog: Option<&str>, bytes: &[u8]) -> Reply {
    let csid = catalog.map(|c| server.csid(c));
    let mut header = vec![("RDM-Type", "rd-response")];
    if let Some(c) = &csid {
        header.push(("Catalog-Service-ID", c.as_str()));
    }
    post(server, message(&header, bytes), Some(TOKEN)).await
}

/// The URLs of `rd-request`'s reply for `query` in order.
pub fn urls(records: &[Record]) -> Vec<String> {
    records.iter().map(|r| r.url_str().into_owned()).collect()
}
