//! RDM requests as HTML form parameters (the note's GET method).
//!
//! "Encode the RDM attributes as per the application/x-www-form-urlencoded specification"
//! — the note's example URLs:
//!
//! ```text
//! /rdm/incoming?type=status-request
//! /rdm/incoming?type=rd-request&ql=gatherer&scope=all
//! /rdm/incoming?type=rd-request&ql=sample-keyword-ql&scope=netscape&view-hits=10&view-attributes=url,title,author
//! ```
//!
//! [`request_from_form`] turns already percent-decoded pairs into the header and query a
//! POSTed message would carry, so a server handles both methods alike; [`request_to_form`]
//! is the inverse, for clients. Parameter names are the short ones of the examples (`type`,
//! `ql`, `scope`, `view-hits`, `view-attributes`, `view-order`, `csid`) or the attribute
//! names themselves (`RDM-Type`, `Catalog-Service-ID`, …), in any case.
//!
//! ```
//! use soif_codecs::rdm::{request_from_form, GathererScope, RdmType};
//! let (header, query) =
//!     request_from_form([("type", "rd-request"), ("ql", "gatherer"), ("scope", "all")]).unwrap();
//! assert_eq!(header.rdm_type, RdmType::RdRequest);
//! assert_eq!(query.unwrap().gatherer_scope().unwrap(), Some(GathererScope::All));
//! ```

use super::header::BodyKind;
use super::{Csid, QueryLanguage, RdmError, RdmHeader, RdmQuery, RdmType};
use super::{ViewAttributes, ViewHits, ViewOrder};

/// The form parameters, each with its short name and the RDM attribute it stands for.
const PARAMETERS: [(&str, &str); 8] = [
    ("type", "RDM-Type"),
    ("ql", "RDM-Query-Language"),
    ("csid", "Catalog-Service-ID"),
    ("version", "RDM-Version"),
    ("scope", "Scope"),
    ("view-attributes", "View-Attributes"),
    ("view-order", "View-Order"),
    ("view-hits", "View-Hits"),
];

/// The index in [`PARAMETERS`] of the parameter with this (short or long) name.
fn parameter_index(param: &str) -> Option<usize> {
    PARAMETERS.iter().position(|(short, long)| {
        param.eq_ignore_ascii_case(short) || param.eq_ignore_ascii_case(long)
    })
}

fn set<'a>(slot: &mut Option<&'a str>, attribute: &str, value: &'a str) -> Result<(), RdmError> {
    if slot.is_some() {
        return Err(RdmError::Duplicate {
            attribute: attribute.to_string(),
            position: None,
        });
    }
    *slot = Some(value);
    Ok(())
}

/// Builds the header (and, for request types with a query body, the query) from decoded
/// form pairs. `type` is required; an unknown parameter is an error naming it, so a typo
/// (`view-hit=10`) is not silently ignored; an empty value counts as absent (forms send
/// empty fields). The query is `None` when no scope or view parameter is given.
pub fn request_from_form<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(RdmHeader, Option<RdmQuery>), RdmError> {
    let mut values: [Option<&str>; PARAMETERS.len()] = [None; PARAMETERS.len()];
    for (name, value) in pairs {
        let idx = parameter_index(name.trim()).ok_or_else(|| {
            RdmError::invalid(
                "form parameter",
                name,
                "unknown parameter (expected type, ql, csid, version, scope, view-attributes, \
                 view-order or view-hits)",
            )
        })?;
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        set(&mut values[idx], PARAMETERS[idx].1, value)?;
    }
    let [ty, ql, csid, version, scope, view_attributes, view_order, view_hits] = values;
    let rdm_type = RdmType::parse(ty.ok_or_else(|| RdmError::Missing {
        template: "RDMHEADER",
        attribute: "type (RDM-Type)".to_string(),
        position: None,
    })?)?;
    let mut header = RdmHeader::new(rdm_type);
    if let Some(v) = version {
        header.version = v.to_string();
    }
    header.query_language = ql.map(QueryLanguage::parse);
    header.catalog = csid.map(Csid::parse).transpose()?;
    let query = RdmQuery {
        scope: scope.map(str::to_string),
        view: super::View {
            attributes: view_attributes.map(ViewAttributes::parse).transpose()?,
            order: view_order.map(ViewOrder::parse).transpose()?,
            hits: view_hits.map(ViewHits::parse).transpose()?,
        },
        extra: Vec::new(),
    };
    if query.scope.is_none() && query.view.is_default() {
        return Ok((header, None));
    }
    if rdm_type.body() != BodyKind::Query {
        return Err(RdmError::invalid(
            "RDM-Type",
            rdm_type.as_str(),
            "this request type takes no scope or view",
        ));
    }
    Ok((header, Some(query)))
}

/// The form pairs for a request: the inverse of [`request_from_form`] (values are not
/// percent-encoded; the HTTP client does that). The query's extra attributes have no form
/// parameter and are not included.
pub fn request_to_form(header: &RdmHeader, query: Option<&RdmQuery>) -> Vec<(String, String)> {
    let mut out = vec![("type".to_string(), header.rdm_type.to_string())];
    let mut push = |k: &str, v: String| out.push((k.to_string(), v));
    if header.version != super::header::RDM_VERSION {
        push("version", header.version.clone());
    }
    if let Some(ql) = &header.query_language {
        push("ql", ql.to_string());
    }
    if let Some(csid) = &header.catalog {
        push("csid", csid.to_string());
    }
    if let Some(q) = query {
        if let Some(s) = &q.scope {
            push("scope", s.clone());
        }
        if let Some(a) = &q.view.attributes {
            push("view-attributes", a.to_string());
        }
        if let Some(o) = &q.view.order {
            push("view-order", o.to_string());
        }
        if let Some(h) = &q.view.hits {
            push("view-hits", h.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_example_urls() {
        // https://host:port/rdm/incoming?type=status-request
        let (h, q) = request_from_form([("type", "status-request")]).unwrap();
        assert_eq!(h.rdm_type, RdmType::StatusRequest);
        assert!(q.is_none());
        // ?type=rd-request&ql=sample-keyword-ql&scope=netscape&view-hits=10
        //  &view-attributes=url,title,author
        let (h, q) = request_from_form([
            ("type", "rd-request"),
            ("ql", "sample-keyword-ql"),
            ("scope", "netscape"),
            ("view-hits", "10"),
            ("view-attributes", "url,title,author"),
        ])
        .unwrap();
        assert_eq!(h.query_language, Some(QueryLanguage::SampleKeyword));
        let q = q.unwrap();
        assert_eq!(q.scope.as_deref(), Some("netscape"));
        assert_eq!(q.view.hits, Some(ViewHits::First(10)));
        assert_eq!(
            q.view.attributes.as_ref().unwrap().names(),
            ["url", "title", "author"]
        );
        // And back.
        let pairs = request_to_form(&h, Some(&q));
        let (h2, q2) =
            request_from_form(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).unwrap();
        assert_eq!((h2, q2), (h, Some(q)));
    }

    #[test]
    fn long_names_csid_and_empty_fields() {
        let (h, q) = request_from_form([
            ("RDM-Type", "taxonomy-description-request"),
            ("RDM-Query-Language", "taxonomy-basic"),
            ("Catalog-Service-ID", "x-catalog://localhost:8080/books"),
            ("Scope", "descendant ROOT"),
            ("view-order", ""),
        ])
        .unwrap();
        assert_eq!(h.catalog.unwrap().name, "books");
        assert!(q.unwrap().view.order.is_none());
    }

    #[test]
    fn bad_forms_say_what() {
        let cases: [(&[(&str, &str)], &str); 6] = [
            (&[], "missing required attribute type (RDM-Type)"),
            (&[("type", "rd-fetch")], "invalid RDM-Type \"rd-fetch\""),
            (
                &[("type", "rd-request"), ("view-hit", "10")],
                "invalid form parameter \"view-hit\"",
            ),
            (
                &[("type", "rd-request"), ("view-hits", "ten")],
                "invalid View-Hits \"ten\"",
            ),
            (
                &[("type", "rd-request"), ("scope", "all"), ("Scope", "x")],
                "Scope is given more than once",
            ),
            (
                &[("type", "status-request"), ("scope", "all")],
                "takes no scope or view",
            ),
        ];
        for (pairs, expected) in cases {
            let e = request_from_form(pairs.iter().copied()).unwrap_err();
            assert!(e.to_string().contains(expected), "{e} / {expected}");
        }
    }
}
