//! The checks of an RDM request that need no catalog ([`check_request`]), and form
//! parameters read as a request.

use crate::catalog::{keyword_query, Query, Scope};
use crate::config::ServerConfig;
use crate::error::RequestError;
use soif_codecs::rdm::{
    GathererScope, QueryLanguage, RdmHeader, RdmQuery, RdmType, SchemaScope, TaxonomyScope,
};

pub(crate) fn parse_form(bytes: &[u8]) -> Result<(RdmHeader, Option<RdmQuery>), RequestError> {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(bytes).into_owned().collect();
    Ok(soif_codecs::rdm::request_from_form(
        pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )?)
}

/// The checks of a request that need no catalog: its RDM version, its query language,
/// and for an `rd-request` / `rd-request-deleted` its scope and view within this server's
/// limits, giving the read to run. (Schema and taxonomy scopes are checked too.)
pub fn check_request(
    config: &ServerConfig,
    head: &RdmHeader,
    query: Option<&RdmQuery>,
) -> Result<Option<Query>, RequestError> {
    check_version(head)?;
    if let (Some(ql), Some(expected)) = (&head.query_language, head.rdm_type.query_language()) {
        let keyword_ok = matches!(
            head.rdm_type,
            RdmType::RdRequest | RdmType::RdRequestDeleted
        ) && *ql == QueryLanguage::SampleKeyword;
        if *ql != expected && !keyword_ok {
            return Err(RequestError::Unsupported(format!(
                "query language {ql} for {} (this server accepts {expected}{})",
                head.rdm_type,
                if head.rdm_type == RdmType::RdRequest {
                    " or sample-keyword-ql"
                } else {
                    ""
                }
            )));
        }
    }
    let scope = query.and_then(|q| q.scope.as_deref());
    match head.rdm_type {
        RdmType::SchemaDescriptionRequest => {
            SchemaScope::parse(scope.unwrap_or("defined SOIF-Attribute"))?;
            Ok(None)
        }
        RdmType::TaxonomyDescriptionRequest => {
            TaxonomyScope::parse(scope.unwrap_or("descendant ROOT"))?;
            Ok(None)
        }
        RdmType::RdRequest | RdmType::RdRequestDeleted => {
            let q = query.cloned().unwrap_or_default();
            let keyword = head.query_language == Some(QueryLanguage::SampleKeyword);
            let scope = match (&q.scope, keyword) {
                (Some(s), true) => Scope::Keywords(keyword_query(s, config.max_query_terms)?),
                (None, true) => {
                    return Err(RequestError::Malformed(
                        "sample-keyword-ql needs a Scope (the words to look for)".into(),
                    ))
                }
                (None, false) => Scope::All,
                (Some(s), false) => match GathererScope::parse(s)? {
                    GathererScope::All => Scope::All,
                    GathererScope::Since(d) => Scope::Since(d.unix_seconds()),
                },
            };
            let deleted = head.rdm_type == RdmType::RdRequestDeleted;
            if deleted && keyword {
                return Err(RequestError::Unsupported(
                    "rd-request-deleted takes the gatherer query language (all, since DATE)".into(),
                ));
            }
            let max_keys = config.max_order_keys;
            if q.view.order.as_ref().is_some_and(|o| o.0.len() > max_keys) {
                return Err(RequestError::OverLimit(format!(
                    "View-Order has more than {max_keys} keys (this server's limit)"
                )));
            }
            Ok(Some(Query {
                scope,
                deleted,
                view: q.view,
                max_sorted_rows: config.max_sorted_rows,
                max_keyword_hits: config.max_keyword_hits,
            }))
        }
        _ => Ok(None),
    }
}

/// RDM 1.x is what the note defines.
pub(crate) fn check_version(head: &RdmHeader) -> Result<(), RequestError> {
    if head.version.starts_with("1.") || head.version == "1" {
        return Ok(());
    }
    Err(RequestError::Unsupported(format!(
        "RDM-Version {} (this server speaks 1.0)",
        head.version
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_keyword_scopes_are_checked() {
        let (mut head, _) = parse_form(b"type=status-request").unwrap();
        assert!(check_version(&head).is_ok());
        head.version = "2.0".into();
        assert!(matches!(
            check_version(&head),
            Err(RequestError::Unsupported(m)) if m.contains("RDM-Version 2.0")
        ));
        let config = ServerConfig::default();
        let (head, q) = parse_form(b"type=rd-request&ql=sample-keyword-ql").unwrap();
        assert!(matches!(
            check_request(&config, &head, q.as_ref()),
            Err(RequestError::Malformed(m)) if m.contains("needs a Scope")
        ));
        let (head, q) = parse_form(b"type=rd-request&ql=sample-keyword-ql&scope=netscape").unwrap();
        let read = check_request(&config, &head, q.as_ref()).unwrap().unwrap();
        assert!(matches!(read.scope, Scope::Keywords(_)));
    }
}
