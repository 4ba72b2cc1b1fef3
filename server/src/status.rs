//! Status messages: "A status message is a HTML 2.0 document" (the note).
//!
//! A `status-response` is an `@RDMHEADER` followed by an HTML 2.0 document (RFC 1866):
//! the `status-request` reply describes the server and its catalogs; the reply to a
//! submission or a failed request says what happened, in words, next to the header's
//! `RDM-Error-Message`. Everything interpolated is escaped, so no request can inject
//! markup.

use std::fmt::Write;

/// The HTML 2.0 document type declaration.
pub const DOCTYPE: &str = "<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">";

/// Escapes `&`, `<`, `>` and `"` for HTML text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A one-message document (a submission's result, an error).
pub fn message_document(title: &str, text: &str) -> String {
    format!(
        "{DOCTYPE}\n<HTML>\n<HEAD>\n<TITLE>{t}</TITLE>\n</HEAD>\n<BODY>\n<H1>{t}</H1>\n<P>{x}\n</BODY>\n</HTML>\n",
        t = escape(title),
        x = escape(text)
    )
}

/// One catalog's line in the status document.
#[derive(Debug, Clone)]
pub struct CatalogStatus {
    /// The catalog's CSID as seen by the client.
    pub csid: String,
    /// Whether it is the default catalog (used when a request names none).
    pub default: bool,
    /// The templates stored: template, table name, rows.
    pub templates: Vec<(String, String, u64)>,
    /// The latest load into the catalog (`soif_runs`), if any.
    pub last_run: Option<soif_store::RunSummary>,
}

/// What the status document reports.
#[derive(Debug, Clone)]
pub struct ServerStatus {
    pub version: &'static str,
    /// HTTP date of the server's start.
    pub started: String,
    pub uptime_seconds: u64,
    pub requests: u64,
    pub failed_requests: u64,
    pub records_submitted: u64,
    pub records_deleted: u64,
    pub catalogs: Vec<CatalogStatus>,
    pub schema: bool,
    pub taxonomy: Option<String>,
}

/// The `status-request` reply document.
pub fn status_document(s: &ServerStatus) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{DOCTYPE}\n<HTML>\n<HEAD>\n<TITLE>soif RDM server status</TITLE>\n</HEAD>\n<BODY>\n\
         <H1>soif RDM server status</H1>\n<P>The server is running.\n<DL>\n\
         <DT>Version<DD>soif {}\n<DT>Started<DD>{}\n<DT>Uptime<DD>{} seconds\n\
         <DT>Requests<DD>{} ({} failed)\n<DT>Submitted<DD>{} RDs stored, {} deleted\n\
         <DT>Schema<DD>{}\n<DT>Taxonomy<DD>{}\n</DL>\n<H2>Catalogs</H2>\n<UL>\n",
        escape(s.version),
        escape(&s.started),
        s.uptime_seconds,
        s.requests,
        s.failed_requests,
        s.records_submitted,
        s.records_deleted,
        if s.schema {
            "loaded from --schema"
        } else {
            "derived from the catalog's tables"
        },
        match &s.taxonomy {
            Some(id) => escape(id),
            None => "none loaded".to_string(),
        }
    );
    for c in &s.catalogs {
        let _ = write!(out, "<LI><CODE>{}</CODE>", escape(&c.csid));
        if c.default {
            out.push_str(" (default)");
        }
        if c.templates.is_empty() {
            out.push_str(": empty");
        } else {
            out.push_str(": ");
        }
        for (i, (template, table, rows)) in c.templates.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(
                out,
                "<CODE>@{}</CODE> {} RD{}",
                escape(template),
                thousands(*rows),
                if *rows == 1 { "" } else { "s" }
            );
            if template != table {
                let _ = write!(out, " (table <CODE>{}</CODE>)", escape(table));
            }
        }
        out.push('\n');
        if let Some(r) = &c.last_run {
            let _ = write!(
                out,
                "<BR>Last load: run {}, {}, started {}",
                r.id,
                escape(&r.status),
                escape(&r.started)
            );
            if let Some(f) = &r.finished {
                let _ = write!(out, ", finished {}", escape(f));
            }
            let _ = writeln!(
                out,
                "; {} records: {} stored, {} deleted, {} rejected",
                thousands(r.records.max(0) as u64),
                thousands(r.upserted.max(0) as u64),
                thousands(r.deleted.max(0) as u64),
                thousands(r.rejected.max(0) as u64)
            );
        }
    }
    out.push_str("</UL>\n</BODY>\n</HTML>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(24_002), "24,002");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn documents_are_html_2_and_escaped() {
        let d = message_document("Error", "bad <scope> & \"x\"");
        assert!(d.starts_with(DOCTYPE));
        assert!(d.contains("bad &lt;scope&gt; &amp; &quot;x&quot;"));
        let s = ServerStatus {
            version: "0.1.0",
            started: "Sun, 22 Nov 2026 08:00:00 GMT".into(),
            uptime_seconds: 5,
            requests: 3,
            failed_requests: 1,
            records_submitted: 2,
            records_deleted: 0,
            catalogs: vec![CatalogStatus {
                csid: "x-catalog://h:1/<a>".into(),
                default: true,
                templates: vec![
                    ("FILE".into(), "FILE".into(), 1_234_567),
                    ("soif_x".into(), "t_soif_x".into(), 1),
                ],
                last_run: Some(soif_store::RunSummary {
                    id: 2,
                    status: "ok".into(),
                    started: "2026-11-22T08:00:00Z".into(),
                    finished: Some("2026-11-22T08:00:05Z".into()),
                    records: 1000,
                    upserted: 990,
                    deleted: 10,
                    rejected: 0,
                }),
            }],
            schema: false,
            taxonomy: None,
        };
        let d = status_document(&s);
        assert!(
            d.contains("x-catalog://h:1/&lt;a&gt;</CODE> (default)"),
            "{d}"
        );
        assert!(d.contains("<CODE>@FILE</CODE> 1,234,567 RDs, "), "{d}");
        assert!(d.contains("<CODE>@soif_x</CODE> 1 RD (table <CODE>t_soif_x</CODE>)"));
        assert!(d.contains(
            "Last load: run 2, ok, started 2026-11-22T08:00:00Z, finished \
             2026-11-22T08:00:05Z; 1,000 records: 990 stored, 10 deleted, 0 rejected"
        ));
        assert!(d.ends_with("</HTML>\n"));
    }
}
