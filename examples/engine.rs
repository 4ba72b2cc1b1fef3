//! Using the soif engine as a library: read any inputs `soif convert` reads, run a
//! transform, and write to a sink of your own next to a built-in one, in one pass.
//!
//! ```text
//! cargo run --example engine -- tests/fixtures/rfc2655/documents.soif
//! ```
//!
//! The pieces are the ones the CLI uses: `soif_sources` (inputs, decompression, JSON
//! Lines), `soif_pipeline::transforms::build` (`-t` specs), `soif_sinks::build`
//! (`--to` formats) and `soif_pipeline::Engine`, which joins them with bounded channels.

use soif_codecs::Record;
use soif_options::ErrorPolicy;
use soif_pipeline::engine::{Engine, EngineOptions};
use soif_pipeline::transforms::{self, TransformContext};
use soif_pipeline::{Error, Sink, SinkError};
use soif_sinks::{RunContext, SinkConfig};
use soif_sources::{expand, InputSettings, InputSource};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A sink of our own: counts records per template.
struct CountTemplates(Arc<Mutex<BTreeMap<String, u64>>>);

impl Sink for CountTemplates {
    fn name(&self) -> &str {
        "count"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        if let Ok(mut counts) = self.0.lock() {
            *counts
                .entry(record.template_str().into_owned())
                .or_default() += 1;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let inputs: Vec<String> = std::env::args().skip(1).collect();
    let source = InputSource::new(expand(&inputs)?, InputSettings::default());
    let transforms = vec![transforms::build("collapse", &TransformContext::default())?];
    let counts = Arc::new(Mutex::new(BTreeMap::new()));
    let sinks: Vec<Box<dyn Sink>> = vec![
        // JSON Lines on stdout…
        soif_sinks::build(
            &SinkConfig::Jsonl(soif_sinks::jsonl::Config::default()),
            &RunContext::default(),
        )?,
        // …and our counter, fed the same records.
        Box::new(CountTemplates(counts.clone())),
    ];
    let opts = EngineOptions {
        policy: ErrorPolicy::Skip,
        ..EngineOptions::default()
    };
    let summary = Engine::new(opts)
        .run(Box::new(source), transforms, sinks)
        .await?;
    eprintln!("{summary}");
    if let Ok(counts) = counts.lock() {
        for (template, n) in counts.iter() {
            eprintln!("{template}: {n}");
        }
    }
    Ok(())
}
