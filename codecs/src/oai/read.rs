//! Reading OAI-PMH 2.0 XML as a harvest receives it: a `ListRecords` page (its
//! `responseDate`, errors, items and resumption token), each item as a record (`oai_dc`
//! as a `Dublin-Core` record, `soif` as the original record, a deleted header as a
//! deletion), and the datestamp granularity of `Identify`. The OAI-PMH source
//! (`soif_sources::oai`) fetches the pages and hands the items on; an item that cannot
//! be read is a [`BadItem`], which the engine rejects like any bad record.

use super::{DC_NS, OAI_NS, SOIF_NS};
use crate::rules::dc::{ELEMENTS, TEMPLATE as DC_TEMPLATE};
use crate::{Action, Attribute, Position, Record};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::{Namespace, ResolveResult};
use quick_xml::NsReader;
use std::sync::Arc;

/// The metadata formats this source reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetadataFormat {
    /// Simple Dublin Core: `Dublin-Core` records.
    OaiDc,
    /// soif's own format: the original records.
    Soif,
}

impl MetadataFormat {
    pub fn prefix(self) -> &'static str {
        match self {
            MetadataFormat::OaiDc => "oai_dc",
            MetadataFormat::Soif => "soif",
        }
    }
}

/// A repository's datestamp granularity (`Identify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Granularity {
    /// `YYYY-MM-DD`.
    Day,
    /// `YYYY-MM-DDThh:mm:ssZ`.
    Second,
}

impl Granularity {
    /// A `responseDate` (`YYYY-MM-DDThh:mm:ssZ`, sometimes with fractions) in this
    /// granularity, or `None` when it is not a date.
    pub fn format(self, response_date: &str) -> Option<String> {
        let d = response_date.trim();
        let b = d.as_bytes();
        let digits =
            |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
        let date_ok = digits(0..4)
            && b.get(4) == Some(&b'-')
            && digits(5..7)
            && b.get(7) == Some(&b'-')
            && digits(8..10);
        if !date_ok {
            return None;
        }
        match self {
            Granularity::Day => Some(d[..10].to_string()),
            Granularity::Second => {
                let time_ok = b.get(10) == Some(&b'T')
                    && digits(11..13)
                    && b.get(13) == Some(&b':')
                    && digits(14..16)
                    && b.get(16) == Some(&b':')
                    && digits(17..19)
                    && d.ends_with('Z');
                time_ok.then(|| format!("{}Z", &d[..19]))
            }
        }
    }

    /// The name `Identify` gives it (`YYYY-MM-DD`, `YYYY-MM-DDThh:mm:ssZ`).
    pub fn name(self) -> &'static str {
        match self {
            Granularity::Day => "YYYY-MM-DD",
            Granularity::Second => "YYYY-MM-DDThh:mm:ssZ",
        }
    }

    /// The granularity of a name as `Identify` gives it.
    pub fn parse(s: &str) -> Option<Granularity> {
        match s.trim() {
            "YYYY-MM-DD" => Some(Granularity::Day),
            "YYYY-MM-DDThh:mm:ssZ" => Some(Granularity::Second),
            _ => None,
        }
    }
}

/// What a page held.
#[derive(Debug, Default)]
pub struct Page {
    pub response_date: Option<String>,
    /// `(code, message)` of each `<error>`.
    pub errors: Vec<(String, String)>,
    pub items: Vec<Result<Record, BadItem>>,
    /// A non-empty resumption token.
    pub token: Option<String>,
}

/// An item of a page that could not be read (no identifier, no metadata, bad base64…),
/// with the reason and where it was; the engine's `Rejection` is made from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadItem {
    /// Why, with the position, page and URL (`"an item without metadata, at
    /// oai+http://h/oai: byte 310, record 3 (oai:h:3), page 1 (http://h/oai?…)"`).
    pub message: String,
    /// Where the item was: the input, the byte offset in the harvest, the item's number
    /// and (as its URL) its identifier.
    pub position: Position,
    /// The item's `<record>` element as it came, for the quarantine.
    pub raw: Option<Bytes>,
}

/// Where a page sits in its harvest, for the positions of its items.
#[derive(Debug, Clone)]
pub struct PageContext<'a> {
    /// The input's name (the `oai+http(s)://` URL as given).
    pub name: Arc<str>,
    /// The page's number, from 1.
    pub page: u64,
    /// The URL the page was fetched from.
    pub url: &'a str,
    /// Bytes of the earlier pages.
    pub offset: u64,
    /// Items of the earlier pages.
    pub records: u64,
}

type XmlResult<T> = Result<T, quick_xml::Error>;

fn in_ns(ns: &ResolveResult<'_>, uri: &str) -> bool {
    matches!(ns, ResolveResult::Bound(Namespace(n)) if *n == uri.as_bytes())
}

/// The error for a document that ends inside an element.
fn unclosed() -> quick_xml::Error {
    quick_xml::Error::Syntax(quick_xml::errors::SyntaxError::UnclosedTag)
}

/// Keeps `depth`, the nesting below the element a loop reads, across an event the loop
/// does not handle itself: `Ok(true)` at the end of that element, `Err` when the
/// document ends first. One place for what `text`, `record`, `oai_dc` and `soif` all do
/// with the elements they skip.
fn nest(depth: &mut u32, event: &Event<'_>) -> XmlResult<bool> {
    match event {
        Event::Start(_) => *depth += 1,
        Event::End(_) if *depth == 0 => return Ok(true),
        Event::End(_) => *depth -= 1,
        Event::Eof => return Err(unclosed()),
        _ => {}
    }
    Ok(false)
}

/// Reads a page of `ListRecords` (or an error reply). `Err` when it is not well-formed
/// XML or not an OAI-PMH reply.
pub fn parse_page(
    body: &[u8],
    format: MetadataFormat,
    ctx: &PageContext<'_>,
) -> Result<Page, String> {
    let mut r = NsReader::from_reader(body);
    r.config_mut().expand_empty_elements = true;
    let mut page = Page::default();
    let mut root = false;
    let xml_err = |r: &NsReader<&[u8]>, e: quick_xml::Error| {
        format!("not well-formed XML at byte {}: {e}", r.error_position())
    };
    loop {
        let start = r.buffer_position();
        let (ns, event) = match r.read_resolved_event() {
            Ok((ns, ev)) => (in_ns(&ns, OAI_NS), ev),
            Err(e) => return Err(xml_err(&r, e)),
        };
        match event {
            Event::Start(e) if ns => match e.local_name().as_ref() {
                b"OAI-PMH" => root = true,
                b"responseDate" => {
                    page.response_date = Some(text(&mut r).map_err(|e| xml_err(&r, e))?)
                }
                b"error" => {
                    let code = attr(&r, &e, b"code").unwrap_or_default();
                    let message = text(&mut r).map_err(|e| xml_err(&r, e))?;
                    page.errors.push((code, message));
                }
                b"record" => {
                    let n = ctx.records + page.items.len() as u64 + 1;
                    let item = record(&mut r, format).map_err(|e| xml_err(&r, e))?;
                    let end = r.buffer_position();
                    let mut position = Position::new(ctx.offset + start, n);
                    position.input = Some(ctx.name.clone());
                    page.items.push(match item {
                        Ok(mut rec) => {
                            rec.position = Some(position);
                            Ok(rec)
                        }
                        Err((id, why)) => {
                            position.url = id.clone();
                            let raw = usize::try_from(start)
                                .ok()
                                .zip(usize::try_from(end).ok())
                                .and_then(|(s, e)| body.get(s..e))
                                .map(Bytes::copy_from_slice);
                            Err(BadItem {
                                message: format!(
                                    "{why}, at {position}, page {} ({})",
                                    ctx.page, ctx.url
                                ),
                                position,
                                raw,
                            })
                        }
                    });
                }
                b"resumptionToken" => {
                    let t = text(&mut r).map_err(|e| xml_err(&r, e))?;
                    let t = t.trim();
                    if !t.is_empty() {
                        page.token = Some(t.to_string());
                    }
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    if !root {
        return Err("not an OAI-PMH reply (no OAI-PMH element)".into());
    }
    Ok(page)
}

/// The granularity an `Identify` reply gives.
pub fn identify_granularity(body: &[u8]) -> Option<Granularity> {
    let mut r = NsReader::from_reader(body);
    r.config_mut().expand_empty_elements = true;
    loop {
        let (ns, event) = r.read_resolved_event().ok()?;
        let ns = in_ns(&ns, OAI_NS);
        match event {
            Event::Start(e) if ns && e.local_name().as_ref() == b"granularity" => {
                return Granularity::parse(&text(&mut r).ok()?)
            }
            Event::Eof => return None,
            _ => {}
        }
    }
}

/// The value of the unqualified attribute `name`.
fn attr(r: &NsReader<&[u8]>, e: &BytesStart<'_>, name: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.as_ref() == name)
        .and_then(|a| a.decode_and_unescape_value(r.decoder()).ok())
        .map(|v| v.into_owned())
}

/// The text of the element just started, up to its end (text of nested elements
/// included): character and predefined entity references resolved, line ends
/// normalised as XML 1.0 says (a CR that matters is sent as `&#13;`).
fn text(r: &mut NsReader<&[u8]>) -> XmlResult<String> {
    let mut out = String::new();
    let mut depth = 0u32;
    loop {
        match r.read_event()? {
            Event::Text(t) => out.push_str(&t.xml10_content()?),
            Event::CData(c) => out.push_str(&c.xml10_content()?),
            Event::GeneralRef(g) => match g.resolve_char_ref()? {
                Some(c) => out.push(c),
                None => {
                    let name = g.decode()?;
                    match quick_xml::escape::resolve_predefined_entity(&name) {
                        Some(s) => out.push_str(s),
                        None => {
                            return Err(quick_xml::Error::Escape(
                                quick_xml::escape::EscapeError::UnrecognizedEntity(
                                    0..name.len(),
                                    name.into_owned(),
                                ),
                            ))
                        }
                    }
                }
            },
            other => {
                if nest(&mut depth, &other)? {
                    return Ok(out);
                }
            }
        }
    }
}

/// One `<record>` (just started): the record, or `(identifier, why)` when its metadata
/// cannot be read. `Err` only for XML that is not well formed.
type ItemResult = Result<Record, (Option<String>, String)>;

fn record(r: &mut NsReader<&[u8]>, format: MetadataFormat) -> XmlResult<ItemResult> {
    let mut identifier: Option<String> = None;
    let mut deleted = false;
    let mut built: Option<Result<Record, String>> = None;
    let mut depth = 0u32;
    loop {
        let (ns, event) = r.read_resolved_event()?;
        let oai = in_ns(&ns, OAI_NS);
        match event {
            Event::Start(e) if oai && depth == 0 => match e.local_name().as_ref() {
                b"header" => {
                    deleted = attr(r, &e, b"status").as_deref() == Some("deleted");
                    let (id, _) = header(r)?;
                    identifier = id;
                }
                b"metadata" => {
                    built = Some(
                        match format {
                            MetadataFormat::OaiDc => oai_dc(r)?.map(|attrs| (attrs, None)),
                            MetadataFormat::Soif => soif(r)?.map(|(attrs, key)| (attrs, Some(key))),
                        }
                        .map(|(attrs, key)| {
                            let (template, url) = key.unwrap_or_else(|| {
                                (
                                    Bytes::from_static(DC_TEMPLATE.as_bytes()),
                                    Bytes::from(identifier.clone().unwrap_or_default()),
                                )
                            });
                            let mut rec = Record::new(template, url);
                            rec.attributes = attrs;
                            rec
                        }),
                    );
                }
                _ => {
                    r.read_to_end(e.name())?;
                }
            },
            other => {
                if nest(&mut depth, &other)? {
                    break;
                }
            }
        }
    }
    let Some(id) = identifier.clone().filter(|i| !i.trim().is_empty()) else {
        return Ok(Err((None, "an item without an identifier".into())));
    };
    if deleted {
        let (template, url) = match format {
            MetadataFormat::OaiDc => (DC_TEMPLATE.as_bytes().to_vec(), id.clone().into_bytes()),
            MetadataFormat::Soif => match soif_identifier(&id) {
                Some(k) => k,
                None => {
                    return Ok(Err((
                        Some(id.clone()),
                        format!(
                            "the deleted item {id} has no identifier of the form \
                             oai:REPOSITORY:TEMPLATE/URL, so its record is unknown"
                        ),
                    )))
                }
            },
        };
        let mut rec = Record::new(template, url);
        rec.action = Some(Action::Delete);
        return Ok(Ok(rec));
    }
    match built {
        Some(Ok(rec)) => Ok(Ok(rec)),
        Some(Err(why)) => Ok(Err((Some(id), why))),
        None => Ok(Err((Some(id), "an item without metadata".into()))),
    }
}

/// A `<header>` (just started): its identifier and datestamp.
fn header(r: &mut NsReader<&[u8]>) -> XmlResult<(Option<String>, Option<String>)> {
    let mut id = None;
    let mut date = None;
    loop {
        let (ns, event) = r.read_resolved_event()?;
        let oai = in_ns(&ns, OAI_NS);
        match event {
            Event::Start(e) if oai && e.local_name().as_ref() == b"identifier" => {
                id = Some(text(r)?.trim().to_string())
            }
            Event::Start(e) if oai && e.local_name().as_ref() == b"datestamp" => {
                date = Some(text(r)?.trim().to_string())
            }
            Event::Start(e) => {
                r.read_to_end(e.name())?;
            }
            Event::End(_) => return Ok((id, date)),
            Event::Eof => return Err(unclosed()),
            _ => {}
        }
    }
}

/// The Appendix C name of a `dc:` element's local name (`title` → `TITLE`).
fn dc_name(local: &[u8]) -> Option<&'static str> {
    ELEMENTS
        .iter()
        .find(|e| e.as_bytes().eq_ignore_ascii_case(local))
        .copied()
}

/// `<metadata>` in `oai_dc` (just started): the attributes, in document order, numbered
/// where an element repeats.
fn oai_dc(r: &mut NsReader<&[u8]>) -> XmlResult<Result<Vec<Attribute>, String>> {
    let mut values: Vec<(&'static str, String)> = Vec::new();
    let mut depth = 0u32;
    loop {
        let (ns, event) = r.read_resolved_event()?;
        let dc = in_ns(&ns, DC_NS);
        match event {
            Event::Start(e) if dc => match dc_name(e.local_name().as_ref()) {
                Some(name) => values.push((name, text(r)?)),
                None => {
                    r.read_to_end(e.name())?;
                }
            },
            other => {
                if nest(&mut depth, &other)? {
                    break;
                }
            }
        }
    }
    Ok(Ok(number_dc(values)))
}

/// `CREATOR` once stays `CREATOR`; several become `CREATOR-1`, `CREATOR-2`, … in order.
fn number_dc(values: Vec<(&'static str, String)>) -> Vec<Attribute> {
    let count = |n: &str| values.iter().filter(|(m, _)| *m == n).count();
    let totals: Vec<usize> = values.iter().map(|(n, _)| count(n)).collect();
    let mut seen: Vec<(&'static str, usize)> = Vec::new();
    values
        .into_iter()
        .zip(totals)
        .map(|((name, value), total)| {
            let attr_name = if total > 1 {
                let k = match seen.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, k)) => {
                        *k += 1;
                        *k
                    }
                    None => {
                        seen.push((name, 1));
                        1
                    }
                };
                format!("{name}-{k}")
            } else {
                name.to_string()
            };
            Attribute::new(attr_name, value.into_bytes())
        })
        .collect()
}

/// `<metadata>` in `soif` (just started): the attributes and `(template, url)`.
#[allow(clippy::type_complexity)]
fn soif(r: &mut NsReader<&[u8]>) -> XmlResult<Result<(Vec<Attribute>, (Bytes, Bytes)), String>> {
    let mut attrs = Vec::new();
    let mut key: Option<(Bytes, Bytes)> = None;
    let mut problem: Option<String> = None;
    let mut depth = 0u32;
    loop {
        let (ns, event) = r.read_resolved_event()?;
        let s = in_ns(&ns, SOIF_NS);
        match event {
            Event::Start(e) if s && e.local_name().as_ref() == b"record" => {
                depth += 1;
                let template = exact_attr(r, &e, "template");
                let url = exact_attr(r, &e, "url");
                match (template, url) {
                    (Ok(t), Ok(u)) => key = Some((t, u)),
                    (Err(m), _) | (_, Err(m)) => problem = Some(m),
                }
            }
            Event::Start(e) if s && e.local_name().as_ref() == b"attribute" => {
                let name = exact_attr(r, &e, "name");
                let base64 = attr(r, &e, b"encoding").as_deref() == Some("base64");
                let text = text(r)?;
                let value = if base64 {
                    let clean: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                    STANDARD
                        .decode(clean)
                        .map_err(|e| format!("a base64 value that does not decode: {e}"))
                } else {
                    Ok(text.into_bytes())
                };
                match (name, value) {
                    (Ok(n), Ok(v)) => attrs.push(Attribute::new(n, v)),
                    (Err(m), _) | (_, Err(m)) => {
                        problem.get_or_insert(m);
                    }
                }
            }
            other => {
                if nest(&mut depth, &other)? {
                    break;
                }
            }
        }
    }
    if let Some(p) = problem {
        return Ok(Err(p));
    }
    Ok(match key {
        Some(k) => Ok((attrs, k)),
        None => Err("no soif:record in the metadata".into()),
    })
}

/// `NAME="…"` or `NAME-base64="…"` of a `soif` element.
fn exact_attr(r: &NsReader<&[u8]>, e: &BytesStart<'_>, name: &str) -> Result<Bytes, String> {
    if let Some(v) = attr(r, e, name.as_bytes()) {
        return Ok(Bytes::from(v));
    }
    let b64 = format!("{name}-base64");
    match attr(r, e, b64.as_bytes()) {
        Some(v) => STANDARD
            .decode(v.trim())
            .map(Bytes::from)
            .map_err(|e| format!("{b64} does not decode: {e}")),
        None => Err(format!("no {name} (or {b64})")),
    }
}

/// The template and URL of an identifier `oai:REPOSITORY:TEMPLATE/URL` as `soif serve`
/// writes them ([`super::ids`]: `%XX` escapes, the template's `/` escaped).
pub fn soif_identifier(id: &str) -> Option<(Vec<u8>, Vec<u8>)> {
    super::ids::split_identifier(id).map(|(_repo, template, url)| (template, url))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> PageContext<'static> {
        PageContext {
            name: Arc::from("oai+http://h/oai"),
            page: 1,
            url: "http://h/oai?verb=ListRecords",
            offset: 0,
            records: 0,
        }
    }

    #[test]
    fn granularity_formats_response_dates() {
        assert_eq!(
            Granularity::Second
                .format("2026-11-24T10:30:26Z")
                .as_deref(),
            Some("2026-11-24T10:30:26Z")
        );
        assert_eq!(
            Granularity::Second
                .format("2026-11-24T10:30:26.123Z")
                .as_deref(),
            Some("2026-11-24T10:30:26Z")
        );
        assert_eq!(
            Granularity::Day.format("2026-11-24T10:30:26Z").as_deref(),
            Some("2026-11-24")
        );
        assert_eq!(Granularity::Second.format("yesterday"), None);
    }

    const DC_PAGE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">
<responseDate>2026-11-24T10:00:00Z</responseDate>
<request verb="ListRecords">http://h/oai</request>
<ListRecords>
<record><header><identifier>oai:h:1</identifier><datestamp>2026-01-01</datestamp><setSpec>a</setSpec></header>
<metadata><oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:title>A &amp; B&#13;</dc:title><dc:creator>X</dc:creator><dc:creator><![CDATA[Y <z>]]></dc:creator><other xmlns="urn:o">skip</other></oai_dc:dc></metadata>
<about><x>y</x></about></record>
<record><header status="deleted"><identifier>oai:h:2</identifier><datestamp>2026-01-02</datestamp></header></record>
<record><header><identifier>oai:h:3</identifier><datestamp>2026-01-02</datestamp></header></record>
<resumptionToken cursor="0" completeListSize="9">tok 1</resumptionToken>
</ListRecords></OAI-PMH>"#;

    #[test]
    fn oai_dc_pages_become_dublin_core_records_and_deletions() {
        let page = parse_page(DC_PAGE.as_bytes(), MetadataFormat::OaiDc, &ctx()).unwrap();
        assert_eq!(page.response_date.as_deref(), Some("2026-11-24T10:00:00Z"));
        assert_eq!(page.token.as_deref(), Some("tok 1"));
        assert_eq!(page.items.len(), 3);
        let r = page.items[0].as_ref().unwrap();
        assert_eq!(r.template_str(), "Dublin-Core");
        assert_eq!(&r.url[..], b"oai:h:1");
        let names: Vec<_> = r
            .attributes
            .iter()
            .map(|a| String::from_utf8_lossy(&a.name).into_owned())
            .collect();
        assert_eq!(names, ["TITLE", "CREATOR-1", "CREATOR-2"]);
        assert_eq!(r.get_str("TITLE"), Some("A & B\r"));
        assert_eq!(r.get_str("CREATOR-2"), Some("Y <z>"));
        let d = page.items[1].as_ref().unwrap();
        assert_eq!(d.action, Some(Action::Delete));
        assert_eq!(&d.url[..], b"oai:h:2");
        let bad = page.items[2].as_ref().unwrap_err();
        assert!(bad.message.contains("without metadata"), "{}", bad.message);
        assert!(bad.message.contains("oai:h:3"), "{}", bad.message);
        assert!(bad.raw.as_ref().unwrap().starts_with(b"<record>"));
    }

    #[test]
    fn soif_pages_give_the_records_back() {
        let page = r#"<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2026-11-24T10:00:00Z</responseDate>
<ListRecords><record><header><identifier>oai:r.example:FILE/http://x/%C3%A9</identifier><datestamp>2026-01-01T00:00:00Z</datestamp></header>
<metadata><soif:record xmlns:soif="urn:x-soif:record:1" template="FILE" url-base64="aHR0cDovL3gvw6k=">
<soif:attribute name="Title">T&#13;
x</soif:attribute><soif:attribute name-base64="QQ==" encoding="base64">AP8=</soif:attribute></soif:record></metadata></record>
<record><header status="deleted"><identifier>oai:r.example:DOC%2FX/u%20v</identifier><datestamp>2026-01-01T00:00:00Z</datestamp></header></record>
<record><header status="deleted"><identifier>urn:other</identifier><datestamp>2026-01-01T00:00:00Z</datestamp></header></record>
<resumptionToken/></ListRecords></OAI-PMH>"#;
        let page = parse_page(page.as_bytes(), MetadataFormat::Soif, &ctx()).unwrap();
        assert_eq!(page.token, None);
        let r = page.items[0].as_ref().unwrap();
        assert_eq!(&r.url[..], "http://x/é".as_bytes());
        assert_eq!(r.get_str("Title"), Some("T\r\nx"));
        assert_eq!(&r.attributes[1].name[..], b"A");
        assert_eq!(r.attributes[1].value.leaves()[0].as_ref(), &[0u8, 0xff][..]);
        let d = page.items[1].as_ref().unwrap();
        assert_eq!((&d.template[..], &d.url[..]), (&b"DOC/X"[..], &b"u v"[..]));
        assert!(page.items[2].is_err());
    }

    #[test]
    fn errors_and_bad_pages() {
        let p = r#"<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2026-11-24T10:00:00Z</responseDate><error code="noRecordsMatch">none</error></OAI-PMH>"#;
        let page = parse_page(p.as_bytes(), MetadataFormat::OaiDc, &ctx()).unwrap();
        assert_eq!(
            page.errors,
            [("noRecordsMatch".to_string(), "none".to_string())]
        );
        assert!(parse_page(b"<html>no</html>", MetadataFormat::OaiDc, &ctx()).is_err());
        assert!(parse_page(
            b"<OAI-PMH xmlns=\"http://www.openarchives.org/OAI/2.0/\"><ListRecords><record>",
            MetadataFormat::OaiDc,
            &ctx()
        )
        .is_err());
        let id = r#"<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><Identify><granularity>YYYY-MM-DD</granularity></Identify></OAI-PMH>"#;
        assert_eq!(identify_granularity(id.as_bytes()), Some(Granularity::Day));
    }
}
