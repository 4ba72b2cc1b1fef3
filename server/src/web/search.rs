//! Search (`/NAME/-/search`): the form's fields read as a keyword query, a match on a
//! field and a date, run a page at a time.

use super::page::{catalog_of, encode_str, guarded, Crumb, Params, WebError, PAGE_SIZE};
use super::results::{list_reply, ListReply, SearchForm};
use super::summary::catalog_row;
use crate::catalog::{keyword_query, Catalog, Flow, Query, Scope};
use crate::state::{AppState, ClientAddr};
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use axum::Extension;
use soif_codecs::rdm::View;
use soif_codecs::Record;
use soif_pipeline::transforms::matching::Match;
use soif_pipeline::transforms::scope::Since;
use std::sync::Arc;

/// A search's parts, checked.
pub(crate) struct Search {
    pub(crate) scope: Scope,
    pub(crate) since: Option<i64>,
    pub(crate) matcher: Option<Match>,
    pub(crate) template: Option<Vec<u8>>,
}

pub(crate) fn parse_search(st: &AppState, form: &SearchForm) -> Result<Search, WebError> {
    let since = if form.since.is_empty() {
        None
    } else {
        let when =
            soif_pipeline::transforms::dates::parse(form.since.as_bytes()).ok_or_else(|| {
                WebError::BadRequest(format!(
                    "since: {:?} is not a date (e.g. 1996-01-31, or Sun, 06 Nov 1994 08:49:37 GMT)",
                    form.since
                ))
            })?;
        Some(when.unix())
    };
    let matcher = if form.match_.is_empty() {
        None
    } else {
        Some(
            Match::parse(&form.match_)
                .map_err(|e| WebError::BadRequest(format!("attribute match: {e}")))?,
        )
    };
    let scope = if !form.q.is_empty() {
        Scope::Keywords(
            keyword_query(&form.q, st.config().max_query_terms).map_err(WebError::from)?,
        )
    } else if let Some(s) = since {
        Scope::Since(s)
    } else {
        Scope::All
    };
    Ok(Search {
        scope,
        since,
        matcher,
        template: (!form.template.is_empty()).then(|| form.template.as_bytes().to_vec()),
    })
}

/// Runs a search: the records of page `page`, and whether there is a next one.
pub(crate) fn run_search(
    st: &AppState,
    catalog: &Catalog,
    s: &Search,
    page: u64,
) -> Result<(Vec<Record>, bool), WebError> {
    let mut q = Query::new(s.scope.clone(), false, View::default());
    q.max_sorted_rows = st.config().max_sorted_rows;
    q.max_keyword_hits = st.config().max_keyword_hits;
    let skip = (page - 1) * PAGE_SIZE;
    let mut seen = 0u64;
    let mut out = Vec::new();
    let mut more = false;
    let keyword = matches!(s.scope, Scope::Keywords(_));
    catalog.query(&q, &mut |r: Record| {
        if s.template.as_deref().is_some_and(|t| t != &r.template[..]) {
            return Ok(Flow::Continue);
        }
        if keyword {
            if let Some(since) = s.since {
                match Since::modified(&r) {
                    Ok(t) if t >= since => {}
                    _ => return Ok(Flow::Continue),
                }
            }
        }
        if s.matcher.as_ref().is_some_and(|m| !m.matches(&r)) {
            return Ok(Flow::Continue);
        }
        seen += 1;
        if seen <= skip {
            return Ok(Flow::Continue);
        }
        if out.len() as u64 >= PAGE_SIZE {
            more = true;
            return Ok(Flow::Stop);
        }
        out.push(r);
        Ok(Flow::Continue)
    })?;
    Ok((out, more))
}

/// `GET /NAME/-/search` and `/NAME/-/search.json`.
pub async fn search_page(
    State(state): State<Arc<AppState>>,
    Path((name, segment)): Path<(String, String)>,
    client: Option<Extension<ClientAddr>>,
    RawQuery(raw): RawQuery,
) -> Response {
    let json = segment == "search.json";
    guarded(state, client, json, move |st| {
        if segment != "search" && segment != "search.json" {
            return Err(WebError::NotFound("no such page".into()));
        }
        let (_, catalog) = catalog_of(st, &name)?;
        let params = Params::parse(raw.as_deref());
        let page = params.page()?;
        let form = SearchForm::from(&params);
        let base = format!("/{}", encode_str(&name));
        let row = catalog_row(&catalog)?;
        let search = parse_search(st, &form)?;
        let (records, more) = run_search(st, &catalog, &search, page)?;
        let here = format!("{base}/-/search");
        let f2 = form.clone();
        list_reply(ListReply {
            json,
            catalog: &name,
            heading: format!("Search {name}"),
            records,
            more,
            page,
            here: &here,
            query: move |p| f2.query_string(p),
            crumbs: vec![
                Crumb {
                    text: name.clone(),
                    href: Some(base.clone()),
                },
                Crumb {
                    text: "search".into(),
                    href: None,
                },
            ],
            form: Some(form),
            row,
            error: None,
        })
    })
    .await
}
