//! soif sources: where records come from.
//!
//! [`InputSource`] reads a list of inputs — files, directories and globs ([`file`], by
//! the path rules of [`paths`], which every front end shares),
//! stdin, `http(s)://` URLs ([`http`]), RDM catalogs ([`catalog`]: `x-catalog://`, or an
//! `http(s)://` URL whose reply is `application/x-rdm`), OAI-PMH repositories ([`oai`]:
//! `oai+http(s)://`) — one after the other as one stream, implementing
//! the engine's [`Source`] trait. Every input is decompressed when its first bytes say
//! gzip, bzip2, xz or zstd ([`decompress`]), then handed on as SOIF bytes for the engine's
//! decoder, or decoded here when it is JSON Lines ([`jsonl`]).
//!
//! ```no_run
//! # async fn f() -> Result<(), soif_pipeline::Error> {
//! use soif_sources::{expand, InputSource, InputSettings};
//! let inputs = expand(&["archive/".to_string(), "https://example.com/All-Templates.gz".to_string()])?;
//! let source = InputSource::new(inputs, InputSettings::default());
//! # let _ = source; Ok(()) }
//! ```
//!
//! Parquet ([`parquet`]) and Arrow IPC ([`arrow`]) files written by soif's sinks are
//! inputs too: by `--from parquet|arrow`, by a `.parquet`, `.arrow` or `.arrows` name, or
//! by their magic bytes (`PAR1`, `ARROW1`, an IPC stream's `FF FF FF FF`) at the start of
//! a file.
//!
//! [`range`] finds the byte ranges of a plain file that decode independently (`soif
//! split`) and reads one of them as a source (`soif convert --range`).
//!
//! With [`InputSettings::checkpoints`] (`--state`), URLs, catalogs and OAI-PMH
//! repositories are read incrementally from the previous run's checkpoints ([`checkpoint`]
//! says what each keeps).
//!
//! JSON Lines is recognised by `--from jsonl`, by a `.jsonl` or `.ndjson` name (before any
//! compression suffix), or — with the default `auto` — by content: SOIF starts with `@`,
//! JSON Lines with `{`.

pub mod arrow;
pub mod catalog;
pub mod checkpoint;
pub mod decompress;
pub mod file;
pub mod http;
mod input;
pub mod jsonl;
mod notices;
pub mod oai;
pub mod parquet;
pub mod paths;
pub mod range;

pub use file::expand;
pub use input::InputSpec;
pub use notices::Notices;
pub use paths::{expand_paths, PathError, PathRules};
pub use tempfile::TempPath;

use decompress::Reader;
use futures::future::BoxFuture;
use futures::StreamExt;
use soif_pipeline::source::{Input, InputData, Source};
use soif_pipeline::Error;
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::codec::FramedRead;

use soif_options::InputFormat;

/// How [`InputSource`] reads its inputs in one run: the source options (made from
/// [`soif_options::SourceOptions`], the one definition every front end parses) as the
/// sources use them, plus what only the run has (its checkpoints, where notices go).
#[derive(Debug, Clone)]
pub struct InputSettings {
    pub format: InputFormat,
    /// The longest JSON Lines line accepted (the SOIF decoder has its own limit).
    pub max_record_size: usize,
    /// Map plain SOIF files into memory and decode them in place (see [`file::map`]);
    /// `false` reads every input as a stream (`--no-mmap`).
    pub mmap: bool,
    /// An incremental run's checkpoints (`--state`; see
    /// [`soif_pipeline::checkpoint`]): a source that can ask for only what is new (HTTP,
    /// RDM catalogs, OAI-PMH) reads its previous checkpoint under its key (the URL as
    /// given) and stages the new one once it has read its input to the end. `None`:
    /// not incremental, read everything. Files are not concerned: the state store picks
    /// which files to read before the run.
    pub checkpoints: Option<soif_pipeline::Checkpoints>,
    /// Where retries and other notices go.
    pub notices: Option<Notices>,
}

impl From<&soif_options::SourceOptions> for InputSettings {
    /// The format, the largest record and mmap; no checkpoints, no notices.
    fn from(o: &soif_options::SourceOptions) -> InputSettings {
        InputSettings {
            format: o.format,
            max_record_size: o.max_record_size.as_usize(),
            mmap: o.mmap,
            ..InputSettings::default()
        }
    }
}

impl Default for InputSettings {
    fn default() -> Self {
        InputSettings {
            format: InputFormat::Auto,
            max_record_size: 64 << 20,
            mmap: true,
            checkpoints: None,
            notices: None,
        }
    }
}

/// Reads [`InputSpec`]s one after the other (see the crate doc).
pub struct InputSource {
    inputs: VecDeque<InputSpec>,
    opts: InputSettings,
    read: Arc<AtomicU64>,
    total: Option<u64>,
    client: Option<reqwest::Client>,
}

impl InputSource {
    pub fn new(inputs: Vec<InputSpec>, opts: InputSettings) -> InputSource {
        // The total is known up front only when every input is a file.
        let total = inputs.iter().try_fold(0u64, |acc, i| match i {
            InputSpec::File(p) | InputSpec::Spooled { path: p, .. } => {
                file::size(p).map(|s| acc + s)
            }
            _ => None,
        });
        InputSource {
            inputs: inputs.into(),
            opts,
            read: Arc::new(AtomicU64::new(0)),
            total,
            client: None,
        }
    }

    fn http_client(&mut self) -> Result<reqwest::Client, Error> {
        if self.client.is_none() {
            self.client = Some(http_client()?);
        }
        self.client
            .clone()
            .ok_or_else(|| Error::Fatal("no HTTP client".into()))
    }

    async fn open(&mut self, spec: InputSpec) -> Result<Input, Error> {
        let name: Arc<str> = Arc::from(spec.name());
        if let InputSpec::Url(url) = &spec {
            if oai::is_oai(url) {
                let data = self.open_oai(url, name.clone()).await?;
                return Ok(Input { name, data });
            }
            if catalog::is_catalog(url) {
                let data = self.open_catalog(url, name.clone()).await?;
                return Ok(Input { name, data });
            }
        }
        if let Some(columnar) = self.columnar(&spec, &name) {
            return self.open_columnar(spec, name, columnar).await;
        }
        if let (true, InputSpec::File(path) | InputSpec::Spooled { path, .. }) =
            (self.opts.mmap, &spec)
        {
            if let Some(mut mapped) = file::map(path)? {
                let soif = match self.opts.format {
                    InputFormat::Auto => {
                        let head = &mapped.data[..mapped.data.len().min(SNIFF_LEN)];
                        !is_jsonl_name(&name) && sniffed(head) == InputFormat::Soif
                    }
                    InputFormat::Soif => true,
                    _ => false,
                };
                if soif {
                    let data = mapped.data.clone();
                    let read = self.read.clone();
                    let mut counted = 0;
                    let consumed = Box::new(move |offset: u64| {
                        read.fetch_add(offset.saturating_sub(counted), Ordering::Relaxed);
                        counted = counted.max(offset);
                        mapped.consumed(offset);
                    });
                    return Ok(Input {
                        name,
                        data: InputData::Held {
                            data,
                            consumed,
                            range: None,
                        },
                    });
                }
            }
        }
        let raw: Reader = match &spec {
            InputSpec::Stdin => Box::new(tokio::io::stdin()),
            InputSpec::File(path) | InputSpec::Spooled { path, .. } => Box::new(
                tokio::fs::File::open(path)
                    .await
                    .map_err(|e| Error::io_path(path, e))?,
            ),
            InputSpec::Url(url) => {
                let client = self.http_client()?;
                let checkpoints = self.opts.checkpoints.clone();
                let previous = checkpoints
                    .as_ref()
                    .and_then(|c| c.previous(&name))
                    .and_then(|cp| http::Validators::from_json(&cp.value));
                let resp = http::get_conditional(&client, url, previous.as_ref()).await?;
                if let (Some(c), Some(p)) = (&checkpoints, &previous) {
                    if resp.status() == reqwest::StatusCode::NOT_MODIFIED {
                        // Unchanged since the last run: nothing to read; the checkpoint
                        // stays what it was.
                        c.stage(&name, checkpoint::KIND_HTTP, p.to_json());
                        return Ok(Input {
                            name,
                            data: InputData::Records(Box::pin(futures::stream::empty())),
                        });
                    }
                }
                let pending = match (&checkpoints, resp.status().is_success()) {
                    (Some(c), true) => http::Validators::of(&resp).map(|v| checkpoint::Pending {
                        checkpoints: c.clone(),
                        key: name.to_string(),
                        kind: checkpoint::KIND_HTTP,
                        value: v.to_json(),
                    }),
                    _ => None,
                };
                if catalog::is_rdm_reply(&resp) {
                    let data = catalog::open_reply(
                        resp,
                        name.clone(),
                        self.opts.max_record_size,
                        Some(self.read.clone()),
                    )
                    .await?;
                    let data = match (data, pending) {
                        (InputData::Records(s), Some(p)) => InputData::Records(p.after_stream(s)),
                        (d, _) => d,
                    };
                    return Ok(Input { name, data });
                }
                let body = http::body(resp, url)?.0;
                match pending {
                    Some(p) => Box::new(checkpoint::StageAtEof {
                        inner: body,
                        pending: Some(p),
                    }),
                    None => body,
                }
            }
        };
        let counted: Reader = Box::new(Counting {
            inner: raw,
            count: self.read.clone(),
        });
        let (_compression, reader) = decompress::decompress(counted)
            .await
            .map_err(|e| Error::io(name.to_string(), e))?;
        let (format, mut reader) = match self.opts.format {
            InputFormat::Auto if is_jsonl_name(&name) => (InputFormat::Jsonl, reader),
            InputFormat::Auto => sniff(reader)
                .await
                .map_err(|e| Error::io(name.to_string(), e))?,
            f => (f, reader),
        };
        if matches!(format, InputFormat::Parquet | InputFormat::Arrow) {
            // Parquet or Arrow on stdin or from a URL, found by its magic bytes: read from
            // a temporary copy, as `--from parquet` would.
            let (mut file, temp) = temp_file().await?;
            tokio::io::copy(&mut reader, &mut file)
                .await
                .map_err(|e| Error::io(format!("copying {name}"), e))?;
            tokio::io::AsyncWriteExt::flush(&mut file)
                .await
                .map_err(|e| Error::io(format!("copying {name}"), e))?;
            let path = temp.to_path_buf();
            let data = match format {
                InputFormat::Parquet => parquet::open(&path, name.clone(), Some(temp))?,
                _ => arrow::open(&path, name.clone(), Some(temp))?,
            };
            return Ok(Input { name, data });
        }
        let data = match format {
            InputFormat::Jsonl => {
                let decoder =
                    jsonl::JsonlDecoder::new(Some(name.clone()), self.opts.max_record_size);
                let ctx = name.clone();
                let stream = FramedRead::with_capacity(reader, decoder, 64 * 1024)
                    .map(move |item| item.map_err(|e| Error::io(ctx.to_string(), e)));
                InputData::Records(Box::pin(stream))
            }
            _ => InputData::Soif(reader),
        };
        Ok(Input { name, data })
    }
}

impl InputSource {
    /// Harvests an OAI-PMH repository, from the previous run's resume point if any.
    async fn open_oai(&mut self, url: &str, name: Arc<str>) -> Result<InputData, Error> {
        let client = self.http_client()?;
        let mut opts = oai::HarvestOptions {
            read: Some(self.read.clone()),
            notices: self.opts.notices.clone(),
            ..oai::HarvestOptions::default()
        };
        if let Some(c) = &self.opts.checkpoints {
            opts.resume = c
                .previous(&name)
                .and_then(|cp| oai::OaiCheckpoint::from_json(&cp.value));
            let (c, key) = (c.clone(), name.to_string());
            opts.done = Some(Arc::new(move |next: oai::OaiCheckpoint| {
                c.stage(&key, checkpoint::KIND_OAI, next.to_json())
            }));
        }
        oai::open(&client, url, name, opts).await
    }

    /// Reads an RDM catalog: with resume points, a plain "send all RD's" input reads only
    /// the deletions and RDs since the previous run started ([`catalog::open_since`]).
    async fn open_catalog(&mut self, url: &str, name: Arc<str>) -> Result<InputData, Error> {
        let client = self.http_client()?;
        let max = self.opts.max_record_size;
        let read = Some(self.read.clone());
        let incremental = match &self.opts.checkpoints {
            Some(c) if catalog::is_incremental(&catalog::CatalogRequest::parse(url)?) => {
                Some(c.clone())
            }
            _ => None,
        };
        let Some(checkpoints) = incremental else {
            return catalog::open(&client, url, name, max, read).await;
        };
        // The run's start (the state store's clock), else now.
        let started = chrono::DateTime::parse_from_rfc3339(checkpoints.run_started())
            .map(|d| d.timestamp())
            .unwrap_or_else(|_| unix_now());
        let previous = checkpoints
            .previous(&name)
            .and_then(|cp| catalog::checkpoint_from_json(&cp.value));
        let (data, server_date) = match previous {
            Some(since) => {
                catalog::open_since(&client, url, name.clone(), max, read, since).await?
            }
            None => (
                catalog::open(&client, url, name.clone(), max, read).await?,
                None,
            ),
        };
        let next = server_date.map_or(started, |d| d.min(started));
        let pending = checkpoint::Pending {
            checkpoints,
            key: name.to_string(),
            kind: checkpoint::KIND_CATALOG,
            value: catalog::checkpoint_json(next),
        };
        Ok(match data {
            InputData::Records(s) => InputData::Records(pending.after_stream(s)),
            d => d,
        })
    }

    /// Parquet or Arrow, by `--from`, by name, or (files) by magic bytes.
    fn columnar(&self, spec: &InputSpec, name: &str) -> Option<InputFormat> {
        match self.opts.format {
            f @ (InputFormat::Parquet | InputFormat::Arrow) => return Some(f),
            InputFormat::Auto => {}
            _ => return None,
        }
        if let Some(f) = columnar_name(name) {
            return Some(f);
        }
        let (InputSpec::File(path) | InputSpec::Spooled { path, .. }) = spec else {
            return None;
        };
        let mut head = [0u8; 6];
        let n = std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
            .ok()?;
        columnar_magic(&head[..n])
    }

    /// Opens a Parquet or Arrow input (stdin and URLs are copied to a temporary file).
    async fn open_columnar(
        &mut self,
        spec: InputSpec,
        name: Arc<str>,
        format: InputFormat,
    ) -> Result<Input, Error> {
        let (path, keep) = match &spec {
            InputSpec::File(p) | InputSpec::Spooled { path: p, .. } => (p.clone(), None),
            _ => {
                let temp = spool(&spec).await?;
                (temp.to_path_buf(), Some(temp))
            }
        };
        if let Some(size) = file::size(&path) {
            self.read.fetch_add(size, Ordering::Relaxed);
        }
        let data = match format {
            InputFormat::Parquet => parquet::open(&path, name.clone(), keep)?,
            _ => arrow::open(&path, name.clone(), keep)?,
        };
        Ok(Input { name, data })
    }
}

/// `.parquet`, `.arrow`, `.arrows`, `.ipc`, `.feather`.
fn columnar_name(name: &str) -> Option<InputFormat> {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".parquet") {
        Some(InputFormat::Parquet)
    } else if [".arrow", ".arrows", ".ipc", ".feather"]
        .iter()
        .any(|e| lower.ends_with(e))
    {
        Some(InputFormat::Arrow)
    } else {
        None
    }
}

/// A Parquet file starts with `PAR1`, an Arrow IPC file with `ARROW1`, an IPC stream with
/// the continuation marker `FF FF FF FF`.
fn columnar_magic(head: &[u8]) -> Option<InputFormat> {
    if head.starts_with(b"PAR1") {
        Some(InputFormat::Parquet)
    } else if head.starts_with(b"ARROW1") || head.starts_with(&[0xff; 4]) {
        Some(InputFormat::Arrow)
    } else {
        None
    }
}

impl Source for InputSource {
    fn next_input(&mut self) -> BoxFuture<'_, Result<Option<Input>, Error>> {
        Box::pin(async move {
            match self.inputs.pop_front() {
                Some(spec) => self.open(spec).await.map(Some),
                None => Ok(None),
            }
        })
    }

    fn bytes_read(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }

    fn total_bytes(&self) -> Option<u64> {
        self.total
    }
}

fn http_client() -> Result<reqwest::Client, Error> {
    reqwest::Client::builder()
        .user_agent(concat!("soif/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Fatal(format!("HTTP client: {e}")))
}

/// Now, in Unix seconds.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Copies an input that cannot be read twice (stdin, a URL) to a temporary file, as
/// stored (still compressed), for a second pass. The file is deleted when the returned
/// path is dropped.
pub async fn spool(spec: &InputSpec) -> Result<tempfile::TempPath, Error> {
    spool_with(spec, &InputSettings::default()).await
}

/// [`spool`] with the run's options: an OAI-PMH harvest is copied as SOIF (deletions in
/// `@DELETE { }`), read from the resume point in `opts.checkpoints` and recording the
/// next one, as the run itself would.
pub async fn spool_with(
    spec: &InputSpec,
    opts: &InputSettings,
) -> Result<tempfile::TempPath, Error> {
    let name = spec.name();
    if let InputSpec::Url(url) = spec {
        if oai::is_oai(url) {
            let mut source = InputSource::new(Vec::new(), opts.clone());
            let data = source.open_oai(url, Arc::from(name.as_str())).await?;
            let (mut file, path) = temp_file().await?;
            catalog::spool_records(data, url, &mut file).await?;
            tokio::io::AsyncWriteExt::flush(&mut file)
                .await
                .map_err(|e| Error::io(format!("copying {name}"), e))?;
            return Ok(path);
        }
        if catalog::is_catalog(url) {
            let (mut file, path) = temp_file().await?;
            catalog::spool_to(&http_client()?, url, &mut file).await?;
            tokio::io::AsyncWriteExt::flush(&mut file)
                .await
                .map_err(|e| Error::io(format!("copying {name}"), e))?;
            return Ok(path);
        }
    }
    let mut reader: Reader = match spec {
        InputSpec::Stdin => Box::new(tokio::io::stdin()),
        InputSpec::Url(url) => {
            let resp = http::get(&http_client()?, url).await?;
            if catalog::is_rdm_reply(&resp) {
                // Copied as its RDs, like a catalog input: the header is not a record.
                let (mut file, path) = temp_file().await?;
                catalog::spool_reply(resp, url, &mut file).await?;
                tokio::io::AsyncWriteExt::flush(&mut file)
                    .await
                    .map_err(|e| Error::io(format!("copying {name}"), e))?;
                return Ok(path);
            }
            http::body(resp, url)?.0
        }
        InputSpec::File(p) | InputSpec::Spooled { path: p, .. } => Box::new(
            tokio::fs::File::open(p)
                .await
                .map_err(|e| Error::io_path(p, e))?,
        ),
    };
    let (mut file, path) = temp_file().await?;
    tokio::io::copy(&mut reader, &mut file)
        .await
        .map_err(|e| Error::io(format!("copying {name} to {}", path.display()), e))?;
    tokio::io::AsyncWriteExt::flush(&mut file)
        .await
        .map_err(|e| Error::io(format!("copying {name}"), e))?;
    Ok(path)
}

/// A new temporary file, deleted when the returned path is dropped.
async fn temp_file() -> Result<(tokio::fs::File, tempfile::TempPath), Error> {
    let temp =
        tempfile::NamedTempFile::new().map_err(|e| Error::io("creating a temporary file", e))?;
    let (file, path) = temp.into_parts();
    Ok((tokio::fs::File::from_std(file), path))
}

/// `.jsonl` / `.ndjson`, also under a compression suffix (`x.jsonl.gz`).
fn is_jsonl_name(name: &str) -> bool {
    let mut n = name;
    for ext in [".gz", ".bz2", ".xz", ".zst", ".zstd"] {
        if let Some(stripped) = n.strip_suffix(ext) {
            n = stripped;
            break;
        }
    }
    n.ends_with(".jsonl") || n.ends_with(".ndjson")
}

/// How many leading bytes format detection looks at.
const SNIFF_LEN: usize = 512;

/// The format by content: Parquet or Arrow by their magic bytes, JSON Lines when the first
/// non-blank byte of `head` is `{`; anything else is SOIF.
fn sniffed(head: &[u8]) -> InputFormat {
    if let Some(f) = columnar_magic(head) {
        return f;
    }
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => InputFormat::Jsonl,
        _ => InputFormat::Soif,
    }
}

/// Peeks at a stream's first bytes for [`sniffed`].
async fn sniff(reader: Reader) -> std::io::Result<(InputFormat, Reader)> {
    let (head, reader) = decompress::peek(reader, SNIFF_LEN).await?;
    Ok((sniffed(&head), reader))
}

/// Counts the bytes read from an input as stored, for progress and the summary.
struct Counting {
    inner: Reader,
    count: Arc<AtomicU64>,
}

impl AsyncRead for Counting {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_names() {
        assert!(is_jsonl_name("a.jsonl"));
        assert!(is_jsonl_name("a.ndjson.gz"));
        assert!(!is_jsonl_name("a.soif.gz"));
    }

    #[test]
    fn columnar_names_and_magic() {
        assert_eq!(columnar_name("x.PARQUET"), Some(InputFormat::Parquet));
        assert_eq!(columnar_name("x.arrows"), Some(InputFormat::Arrow));
        assert_eq!(columnar_name("x.soif"), None);
        assert_eq!(columnar_magic(b"PAR1\x15"), Some(InputFormat::Parquet));
        assert_eq!(columnar_magic(b"ARROW1"), Some(InputFormat::Arrow));
        assert_eq!(
            columnar_magic(b"\xff\xff\xff\xff\x10"),
            Some(InputFormat::Arrow)
        );
        assert_eq!(columnar_magic(b"@FILE {"), None);
    }
}
