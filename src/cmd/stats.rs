//! `soif stats`: what is in an archive — records per template, attribute frequencies and
//! value sizes — as a table or JSON, and optionally a CIP-HINT object (RFC 2655 App. B).
//!
//! Memory is bounded whatever the input: at most [`MAX_TEMPLATES`] templates and
//! [`MAX_ATTRIBUTES`] distinct (template, attribute) pairs are tracked (the rest are
//! counted under `(other)`), and each CIP-HINT weightlist keeps at most `--max-values`
//! distinct values of at most [`MAX_HINT_VALUE`] bytes. When a weightlist is full, its
//! less frequent half is dropped and the hint declares a `Threshold-[T:A]` above the
//! largest count dropped: values that occur more often than the threshold are listed,
//! their counts exact up to that threshold (a dropped value that comes back starts
//! counting again, so its count may be low by at most the threshold).

use crate::input::InputArgs;
use crate::terminal::{exit_for, fail, runtime, Reporter};
use bytes::Bytes;
use clap::Args;
use soif_codecs::{Record, Value};
use soif_pipeline::transforms;
use soif_pipeline::{Engine, Error, Sink, SinkError};
use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// Templates tracked by name; others are counted under `(other)`.
pub const MAX_TEMPLATES: usize = 1_000;
/// (template, attribute) pairs tracked by name; others are counted under `(other)`.
pub const MAX_ATTRIBUTES: usize = 20_000;
/// Longest value that goes into a CIP-HINT weightlist (longer ones are counted only).
pub const MAX_HINT_VALUE: usize = 1024;

/// Report templates, attribute frequencies and value sizes; write a CIP-HINT object.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  soif stats All-Templates.gz
  soif stats archive/ --json
  soif stats archive/ --cip-hint DOCUMENT:Author,DOCUMENT:Keywords --threshold 5 -o hint.soif

--cip-hint writes a @CIP-HINT object (RFC 2655 Appendix B) instead of the table:
Attribute-Identifier-List, Total-Object-Count, and per TEMPLATE:Attribute a
Weightlist-[TEMPLATE:Attribute] of `Value;Object-Count` entries (most frequent first,
commas in values escaped as `\\,`) and, when values were left out, a
Threshold-[TEMPLATE:Attribute]. An attribute matches as in RFC 2655 section 4: case
does not matter and a -N suffix is ignored (Author matches Author-1).")]
pub struct StatsArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// A transform NAME[:ARGS] applied before counting; repeat to chain them.
    #[arg(short = 't', long = "transform", value_name = "TRANSFORM")]
    pub transforms: Vec<String>,

    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,

    /// Write a CIP-HINT object for these TEMPLATE:Attribute identifiers.
    #[arg(long, value_name = "T:A,…", value_delimiter = ',')]
    pub cip_hint: Option<Vec<String>>,

    /// CIP-HINT: the URL of the hint object (default `-`).
    #[arg(long, value_name = "URL", default_value = "-")]
    pub cip_url: String,

    /// CIP-HINT: a Source URI (repeatable).
    #[arg(long, value_name = "URI")]
    pub cip_source: Vec<String>,

    /// CIP-HINT: leave out values found in fewer objects than this.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threshold: u64,

    /// CIP-HINT: distinct values kept per weightlist (bounds memory).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_values: usize,

    /// Write the report here instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<String>,
}

pub fn run(args: StatsArgs) -> ExitCode {
    let hint_ids = match args.cip_hint.as_deref().map(parse_hint_ids).transpose() {
        Ok(ids) => ids,
        Err(e) => return fail(&e),
    };
    let stats = Arc::new(Mutex::new(Stats::new(
        hint_ids.unwrap_or_default(),
        args.max_values.max(2),
    )));
    let reporter = Reporter::new(args.input.quiet);
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(&e),
    };
    let result = rt.block_on(async {
        let opts = args.input.engine_options(&reporter)?;
        let specs = args.input.specs()?;
        let ctx = args.input.transform_context(None)?;
        let transforms = args
            .transforms
            .iter()
            .map(|t| transforms::build(t, &ctx))
            .collect::<Result<Vec<_>, _>>()?;
        let sink = StatsSink(stats.clone());
        Engine::new(opts)
            .run(
                Box::new(args.input.source(specs)),
                transforms,
                vec![Box::new(sink)],
            )
            .await
    });
    rt.shutdown_background();
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            reporter.abandon();
            return fail(&e);
        }
    };
    let written = (|| -> Result<(), Error> {
        let stats = stats
            .lock()
            .map_err(|_| Error::Fatal("statistics were lost to a panic".into()))?;
        let mut out = soif_sinks::output::open_output(args.output.as_deref())?;
        let mut buf = Vec::new();
        if args.cip_hint.is_some() {
            stats.cip_hint(&args, now_http_date(), &mut buf);
        } else if args.json {
            let mut j = stats.to_json();
            j["rejected"] = summary.rejected.into();
            buf = serde_json::to_vec_pretty(&j).map_err(|e| Error::Fatal(format!("JSON: {e}")))?;
            buf.push(b'\n');
        } else {
            stats.table(&mut buf);
        }
        out.write_all(&buf)
            .and_then(|()| out.flush())
            .map_err(|e| Error::io("writing the report", e))
    })();
    if let Err(e) = written {
        return fail(&e);
    }
    reporter.summary(&summary);
    exit_for(&summary)
}

/// `DOCUMENT:Author` → (`DOCUMENT`, `Author`).
fn parse_hint_ids(ids: &[String]) -> Result<Vec<(String, String)>, Error> {
    ids.iter()
        .map(|id| match id.trim().split_once(':') {
            Some((t, a)) if !t.is_empty() && !a.is_empty() => {
                Ok((t.trim().to_string(), a.trim().to_string()))
            }
            _ => Err(Error::Config(format!(
                "--cip-hint takes TEMPLATE:Attribute identifiers (got `{id}`)"
            ))),
        })
        .collect()
}

/// Counts for one attribute of one template.
#[derive(Debug, Default, Clone)]
struct AttrStats {
    count: u64,
    bytes: u64,
    max: u64,
}

#[derive(Debug, Default)]
struct TemplateStats {
    records: u64,
    attributes: HashMap<Bytes, AttrStats>,
}

/// A bounded value counter for one weightlist (see the module doc).
#[derive(Debug)]
struct Weights {
    counts: HashMap<Bytes, u64>,
    cap: usize,
    /// Every count dropped so far was at most this.
    floor: u64,
    too_long: u64,
}

impl Weights {
    fn new(cap: usize) -> Weights {
        Weights {
            counts: HashMap::new(),
            cap,
            floor: 0,
            too_long: 0,
        }
    }

    fn add(&mut self, value: &Bytes) {
        if value.len() > MAX_HINT_VALUE {
            self.too_long += 1;
            return;
        }
        if let Some(n) = self.counts.get_mut(value) {
            *n += 1;
            return;
        }
        if self.counts.len() >= self.cap {
            self.prune();
        }
        self.counts.insert(value.clone(), 1);
    }

    /// Drops the less frequent half.
    fn prune(&mut self) {
        let mut counts: Vec<u64> = self.counts.values().copied().collect();
        let mid = counts.len() / 2;
        let (_, median, _) = counts.select_nth_unstable(mid);
        let median = *median;
        self.counts.retain(|_, n| *n > median);
        self.floor = self.floor.max(median);
    }
}

struct Stats {
    records: u64,
    templates: HashMap<Bytes, TemplateStats>,
    other_templates: u64,
    attribute_pairs: usize,
    other_attributes: u64,
    value_bytes: u64,
    hints: Vec<((String, String), Weights)>,
}

const OTHER: &[u8] = b"(other)";

impl Stats {
    fn new(hint_ids: Vec<(String, String)>, cap: usize) -> Stats {
        Stats {
            records: 0,
            templates: HashMap::new(),
            other_templates: 0,
            attribute_pairs: 0,
            other_attributes: 0,
            value_bytes: 0,
            hints: hint_ids
                .into_iter()
                .map(|id| (id, Weights::new(cap)))
                .collect(),
        }
    }

    fn observe(&mut self, record: &Record) {
        self.records += 1;
        let flat = record.flattened();
        let key = if self.templates.contains_key(&flat.template)
            || self.templates.len() < MAX_TEMPLATES
        {
            flat.template.clone()
        } else {
            self.other_templates += 1;
            Bytes::from_static(OTHER)
        };
        let t = self.templates.entry(key).or_default();
        t.records += 1;
        for a in &flat.attributes {
            let len = a.value.as_bytes().map_or(0, |b| b.len()) as u64;
            self.value_bytes += len;
            let name =
                if t.attributes.contains_key(&a.name) || self.attribute_pairs < MAX_ATTRIBUTES {
                    a.name.clone()
                } else {
                    self.other_attributes += 1;
                    Bytes::from_static(OTHER)
                };
            let s = t.attributes.entry(name).or_insert_with(|| {
                self.attribute_pairs += 1;
                AttrStats::default()
            });
            s.count += 1;
            s.bytes += len;
            s.max = s.max.max(len);
        }
        for ((template, attr), weights) in &mut self.hints {
            if !record.template.eq_ignore_ascii_case(template.as_bytes()) {
                continue;
            }
            // Objects containing a value: count each value once per record.
            let mut seen: Vec<&Bytes> = Vec::new();
            for a in &record.attributes {
                if !rfc2655_matches(&a.name, attr) {
                    continue;
                }
                for v in leaves(&a.value) {
                    if !seen.contains(&v) {
                        seen.push(v);
                        weights.add(v);
                    }
                }
            }
        }
    }

    fn sorted_templates(&self) -> Vec<(&Bytes, &TemplateStats)> {
        let mut t: Vec<_> = self.templates.iter().collect();
        t.sort_by(|a, b| b.1.records.cmp(&a.1.records).then(a.0.cmp(b.0)));
        t
    }

    fn sorted_attributes(t: &TemplateStats) -> Vec<(&Bytes, &AttrStats)> {
        let mut a: Vec<_> = t.attributes.iter().collect();
        a.sort_by(|x, y| y.1.count.cmp(&x.1.count).then(x.0.cmp(y.0)));
        a
    }

    fn table(&self, out: &mut Vec<u8>) {
        let s = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
        let _ = writeln!(
            out,
            "{} records, {} templates, {} bytes of values",
            self.records,
            self.templates.len(),
            self.value_bytes
        );
        let _ = writeln!(out);
        let templates = self.sorted_templates();
        let w = templates
            .iter()
            .map(|(n, _)| n.len())
            .max()
            .unwrap_or(8)
            .max(8);
        let _ = writeln!(out, "{:<w$}  {:>10}", "TEMPLATE", "RECORDS");
        for (name, t) in &templates {
            let _ = writeln!(out, "{:<w$}  {:>10}", s(name), t.records);
        }
        let aw = templates
            .iter()
            .flat_map(|(_, t)| t.attributes.keys().map(|k| k.len()))
            .max()
            .unwrap_or(9)
            .max(9);
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<w$}  {:<aw$}  {:>10}  {:>7}  {:>12}  {:>10}",
            "TEMPLATE", "ATTRIBUTE", "COUNT", "IN %", "VALUE BYTES", "LARGEST"
        );
        for (name, t) in &templates {
            for (attr, a) in Stats::sorted_attributes(t) {
                let pct = if t.records > 0 {
                    (a.count as f64 * 100.0 / t.records as f64).min(100.0)
                } else {
                    0.0
                };
                let _ = writeln!(
                    out,
                    "{:<w$}  {:<aw$}  {:>10}  {:>6.1}%  {:>12}  {:>10}",
                    s(name),
                    s(attr),
                    a.count,
                    pct,
                    a.bytes,
                    a.max
                );
            }
        }
        if self.other_templates + self.other_attributes > 0 {
            let _ = writeln!(
                out,
                "\n(other): {} records of untracked templates, {} values of untracked attributes",
                self.other_templates, self.other_attributes
            );
        }
    }

    fn to_json(&self) -> serde_json::Value {
        let s = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
        let mut templates = serde_json::Map::new();
        for (name, t) in self.sorted_templates() {
            let mut attrs = serde_json::Map::new();
            for (attr, a) in Stats::sorted_attributes(t) {
                attrs.insert(
                    s(attr),
                    serde_json::json!({"count": a.count, "bytes": a.bytes, "max": a.max}),
                );
            }
            templates.insert(
                s(name),
                serde_json::json!({"records": t.records, "attributes": attrs}),
            );
        }
        serde_json::json!({
            "records": self.records,
            "value_bytes": self.value_bytes,
            "templates": templates,
        })
    }

    /// The `@CIP-HINT` object (RFC 2655 App. B), canonical SOIF.
    fn cip_hint(&self, args: &StatsArgs, date: String, out: &mut Vec<u8>) {
        let mut r = Record::new("CIP-HINT", args.cip_url.clone());
        let ids: Vec<String> = self
            .hints
            .iter()
            .map(|((t, a), _)| format!("{t}:{a}"))
            .collect();
        r.push("Attribute-Identifier-List", ids.join(", "));
        match args.cip_source.as_slice() {
            [] => {}
            [one] => r.push("Source", one.as_str()),
            many => {
                for (i, s) in many.iter().enumerate() {
                    r.push(&format!("Source-{}", i + 1), s.as_str());
                }
            }
        }
        r.push("Total-Object-Count", self.records.to_string());
        for ((t, a), w) in &self.hints {
            let threshold = args.threshold.max(w.floor + 1);
            let mut entries: Vec<(&Bytes, u64)> = w
                .counts
                .iter()
                .filter(|(_, n)| **n >= threshold)
                .map(|(v, n)| (v, *n))
                .collect();
            entries.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
            let mut list = Vec::new();
            for (i, (v, n)) in entries.iter().enumerate() {
                if i > 0 {
                    list.extend_from_slice(b", ");
                }
                for &b in v.iter() {
                    if b == b',' || b == b'\\' {
                        list.push(b'\\');
                    }
                    list.push(b);
                }
                list.extend_from_slice(format!(";{n}").as_bytes());
            }
            r.push(&format!("Weightlist-[{t}:{a}]"), list);
            if threshold > 1 {
                r.push(&format!("Threshold-[{t}:{a}]"), threshold.to_string());
            }
        }
        r.push("Date", date);
        soif_codecs::soif::encode_record(&r, out);
    }
}

/// RFC 2655 §4: the name matches ignoring case, with any `-N` suffix removed.
/// RFC 2655 §4: the attribute name matches ignoring case and a `-N` suffix (the rule the
/// `match` transform uses).
fn rfc2655_matches(name: &[u8], attr: &str) -> bool {
    soif_codecs::rules::names::attribute_matches(attr.as_bytes(), name)
}

fn leaves(v: &Value) -> Vec<&Bytes> {
    v.leaves()
}

/// The current time as an HTTP date (`Sun, 05 Jan 1997 08:33:33 GMT`), as in the RFC's
/// example hint.
fn now_http_date() -> String {
    soif_codecs::rdm::RdmDate::now().to_http_string()
}

/// Seconds since the epoch as an HTTP date.
#[cfg(test)]
fn http_date(secs: u64) -> String {
    soif_codecs::rdm::RdmDate::from_unix(secs as i64).to_http_string()
}

/// Feeds records into the shared [`Stats`].
struct StatsSink(Arc<Mutex<Stats>>);

impl Sink for StatsSink {
    fn name(&self) -> &str {
        "stats"
    }

    fn write(&mut self, record: &Record) -> Result<(), SinkError> {
        self.0
            .lock()
            .map_err(|_| SinkError::Fatal(Error::Fatal("statistics lost to a panic".into())))?
            .observe(record);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        // The RFC's example hint date.
        assert_eq!(http_date(852_453_213), "Sun, 05 Jan 1997 08:33:33 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    }

    #[test]
    fn matching_ignores_case_and_number_suffix() {
        assert!(rfc2655_matches(b"Author-1", "author"));
        assert!(rfc2655_matches(b"AUTHOR", "Author"));
        assert!(!rfc2655_matches(b"Author-X", "Author"));
        assert!(!rfc2655_matches(b"Authors", "Author"));
    }

    #[test]
    fn weights_stay_bounded() {
        let mut w = Weights::new(4);
        for i in 0..100u32 {
            w.add(&Bytes::from(format!("v{}", i % 10)));
            w.add(&Bytes::from_static(b"frequent"));
        }
        assert!(w.counts.len() <= 4);
        assert!(w.floor >= 1);
        assert!(w.counts.get(&Bytes::from_static(b"frequent")).copied() > Some(w.floor));
    }
}
