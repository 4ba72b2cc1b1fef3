//! `soif rdm`: send one RDM request to a catalog server and print the reply message.
//!
//! The reply (an `@RDMHEADER`, then RDs, a description, or an HTML 2.0 status document)
//! is written as received, streamed, to stdout or `-o`. To convert the RDs of an
//! `rd-request` instead, give the catalog as an input: `soif convert
//! 'x-catalog://host:port/name?scope=all' --to jsonl`.

use crate::terminal::{fail, runtime};
use clap::Args;
use futures::StreamExt;
use soif_codecs::rdm::{
    Csid, QueryLanguage, RdmHeader, RdmQuery, RdmType, View, ViewAttributes, ViewHits, ViewOrder,
};
use soif_pipeline::Error;
use soif_sources::catalog::{self, CatalogRequest};
use std::process::ExitCode;
use tokio::io::AsyncWriteExt;

/// Send one RDM request and print the reply.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples (the note's requests), with C=x-catalog://127.0.0.1:8080/catalog:
  soif rdm $C --type status-request
  soif rdm $C --type rd-request --scope all
  soif rdm $C --type rd-request --scope 'since Sun, 06 Nov 1994 08:49:37 GMT'
  soif rdm $C --type rd-request --ql sample-keyword-ql --scope netscape \\
      --view-hits 10 --view-attributes URL,Title,Author,Score --view-order -Score,+Title
  soif rdm $C --type rd-request-deleted --scope all
  soif rdm $C --type server-description-request
  soif rdm $C --type schema-description-request --scope 'defined SOIF-Attribute'
  soif rdm $C --type taxonomy-description-request --scope 'anklebiter ROOT'

Exit status: 0 the server answered the request, 1 it answered with an error (its
RDM-Error-Message on stderr) or could not be reached, 2 usage error."
)]
pub struct RdmArgs {
    /// The catalog (x-catalog://host:port/name) or the server's http(s) URL (its default
    /// catalog; `/rdm/incoming` is added when the URL has no path).
    #[arg(value_name = "CATALOG")]
    pub catalog: String,

    /// The request: rd-request, rd-request-deleted, server-description-request,
    /// schema-description-request, taxonomy-description-request, status-request.
    #[arg(long = "type", value_name = "RDM-TYPE", default_value = "rd-request")]
    pub rdm_type: String,

    /// RDM-Query-Language (default: gatherer, schema-basic or taxonomy-basic, as the type
    /// takes; sample-keyword-ql for keyword searches).
    #[arg(long, value_name = "QL")]
    pub ql: Option<String>,

    /// Scope: `all`, `since DATE`, keywords, `defined ATTR`, `descendant ROOT`, …
    #[arg(long, value_name = "SCOPE")]
    pub scope: Option<String>,

    /// View-Attributes: the attributes to return, e.g. URL,Title,Author.
    #[arg(long, value_name = "A,B,…")]
    pub view_attributes: Option<String>,

    /// View-Order, e.g. -Score,+Title.
    #[arg(long, value_name = "(+|-)A,…")]
    pub view_order: Option<String>,

    /// View-Hits: N (the first N) or M..N.
    #[arg(long, value_name = "N|M..N")]
    pub view_hits: Option<String>,

    /// Write the reply here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(args: RdmArgs) -> ExitCode {
    let request = match request(&args) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let result = runtime().and_then(|rt| rt.block_on(send(&args, &request)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn config<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> Error + '_ {
    move |e| Error::Config(format!("{what}: {e}"))
}

fn request(args: &RdmArgs) -> Result<CatalogRequest, Error> {
    let rdm_type = RdmType::parse(&args.rdm_type).map_err(config("--type"))?;
    if !rdm_type.is_request() {
        return Err(Error::Config(format!(
            "--type {rdm_type}: not a request (submit records with `soif convert … --to rdm`)"
        )));
    }
    let (endpoint, csid) = if Csid::is_csid(&args.catalog) {
        let csid = Csid::parse(&args.catalog).map_err(config("CATALOG"))?;
        (csid.endpoint(), Some(csid))
    } else {
        let target = soif_sinks::rdm::Target::parse(&args.catalog)?;
        (target.endpoint, None)
    };
    let mut header = RdmHeader::new(rdm_type);
    header.catalog = csid;
    header.query_language = match &args.ql {
        Some(q) => Some(QueryLanguage::parse(q)),
        None => rdm_type.query_language(),
    };
    let view = View {
        attributes: args
            .view_attributes
            .as_deref()
            .map(ViewAttributes::parse)
            .transpose()
            .map_err(config("--view-attributes"))?,
        order: args
            .view_order
            .as_deref()
            .map(ViewOrder::parse)
            .transpose()
            .map_err(config("--view-order"))?,
        hits: args
            .view_hits
            .as_deref()
            .map(ViewHits::parse)
            .transpose()
            .map_err(config("--view-hits"))?,
    };
    let takes_query = matches!(
        rdm_type,
        RdmType::RdRequest
            | RdmType::RdRequestDeleted
            | RdmType::SchemaDescriptionRequest
            | RdmType::TaxonomyDescriptionRequest
    );
    let query = if args.scope.is_none() && view.is_default() {
        None
    } else if !takes_query {
        return Err(Error::Config(format!(
            "--type {rdm_type} takes no --scope or --view-* options"
        )));
    } else {
        Some(RdmQuery {
            scope: args.scope.clone(),
            view,
            extra: Vec::new(),
        })
    };
    Ok(CatalogRequest {
        endpoint,
        header,
        query,
    })
}

async fn send(args: &RdmArgs, request: &CatalogRequest) -> Result<(), Error> {
    let client = catalog::client()?;
    let resp = catalog::send(&client, request, &args.catalog).await?;
    let mut out: Box<dyn tokio::io::AsyncWrite + Unpin + Send> = match &args.output {
        Some(p) => Box::new(
            tokio::fs::File::create(p)
                .await
                .map_err(|e| Error::io_path(p, e))?,
        ),
        None => Box::new(tokio::io::stdout()),
    };
    let shown = args
        .output
        .as_ref()
        .map_or("stdout".to_string(), |p| p.display().to_string());
    let mut body = resp.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk =
            chunk.map_err(|e| Error::Fatal(format!("{}: reading the reply: {e}", args.catalog)))?;
        out.write_all(&chunk)
            .await
            .map_err(|e| Error::io(shown.clone(), e))?;
    }
    out.flush().await.map_err(|e| Error::io(shown, e))?;
    Ok(())
}
