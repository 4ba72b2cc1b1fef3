//! Search (`/NAME/-/search`): the form's fields read as a keyword query, a match on a
//! field and a date, run a page at a time.

use super::facets::{
    facets_available, hidden_fields, indexed_counts, narrowed_records, narrowing_query, views,
    FacetQuery, Format, Tally,
};
use super::page::{catalog_of, encode_str, guarded, Crumb, Params, WebError, PAGE_SIZE};
use super::results::{list_reply, ListReply, SearchForm};
use super::summary::catalog_row;
use crate::catalog::{keyword_query, Catalog, Flow, Query, Scope};
use crate::state::{AppState, ClientAddr};
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use axum::Extension;
use soif_codecs::rdm::View;
use soif_codecs::rules::modified::modified;
use soif_codecs::Record;
use soif_pipeline::transforms::matching::Match;
use soif_store::facets::{Facet, FacetCounts, FacetKey, Narrowing};
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
        let when = soif_codecs::rules::dates::parse(form.since.as_bytes()).ok_or_else(|| {
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

impl Search {
    /// True when `r`, a record of the search's scope, is one of its results.
    pub(crate) fn accepts(&self, r: &Record) -> bool {
        if self
            .template
            .as_deref()
            .is_some_and(|t| t != &r.template[..])
        {
            return false;
        }
        if let (Scope::Keywords(_), Some(since)) = (&self.scope, self.since) {
            match modified(r) {
                Ok(t) if t >= since => {}
                _ => return false,
            }
        }
        self.matcher.as_ref().is_none_or(|m| m.matches(r))
    }

    /// The facet values of `r` when it is one of this search's results narrowed by
    /// `narrowing`; `None` when it is not.
    pub(crate) fn keep(&self, r: &Record, narrowing: &Narrowing) -> Option<FacetKey> {
        if !self.accepts(r) {
            return None;
        }
        let key = FacetKey::of(r);
        narrowing.matches(&key).then_some(key)
    }

    /// True when the search is only a narrowing: no keywords, match or date.
    pub(crate) fn is_narrowing_only(&self) -> bool {
        matches!(self.scope, Scope::All) && self.matcher.is_none() && self.since.is_none()
    }
}

/// Runs a search: the records of page `page`, and whether there is a next one. A search
/// that is only a narrowing reads the narrowed records through the facet tables (when
/// the catalog has them); any other filters the records it reads.
pub(crate) fn run_search(
    st: &AppState,
    catalog: &Catalog,
    s: &Search,
    narrowing: &Narrowing,
    page: u64,
) -> Result<(Vec<Record>, bool), WebError> {
    let skip = (page - 1) * PAGE_SIZE;
    if s.is_narrowing_only() && !narrowing.is_empty() && facets_available(catalog)? {
        let mut records = narrowed_records(catalog, narrowing, skip, PAGE_SIZE + 1)?;
        let more = records.len() as u64 > PAGE_SIZE;
        records.truncate(PAGE_SIZE as usize);
        return Ok((records, more));
    }
    let mut q = Query::new(s.scope.clone(), false, View::default());
    q.max_sorted_rows = st.config().max_sorted_rows;
    q.max_keyword_hits = st.config().max_keyword_hits;
    let mut seen = 0u64;
    let mut out = Vec::new();
    let mut more = false;
    catalog.query(&q, &mut |r: Record| {
        if s.keep(&r, narrowing).is_none() {
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

/// The counts of the shown facets over a search's results (at most `--max-keyword-hits`
/// of them are read), and whether every result was counted.
pub(crate) fn search_counts(
    st: &AppState,
    catalog: &Catalog,
    search: &Search,
    q: &FacetQuery,
) -> Result<(Vec<FacetCounts>, bool), WebError> {
    let cap = st.config().max_keyword_hits;
    let mut query = Query::new(search.scope.clone(), false, View::default());
    query.max_sorted_rows = st.config().max_sorted_rows;
    query.max_keyword_hits = cap;
    let mut tallies: Vec<Tally> = q.shown.iter().map(|_| Tally::default()).collect();
    let mut total = 0u64;
    let mut complete = true;
    catalog.query(&query, &mut |r: Record| {
        let Some(key) = search.keep(&r, &q.narrowing) else {
            return Ok(Flow::Continue);
        };
        if total >= cap {
            complete = false;
            return Ok(Flow::Stop);
        }
        total += 1;
        for (tally, facet) in tallies.iter_mut().zip(&q.shown) {
            tally.add(key.value(*facet));
        }
        Ok(Flow::Continue)
    })?;
    let counts = tallies
        .into_iter()
        .zip(&q.shown)
        .map(|(t, f)| t.counts(*f, q.size, total))
        .collect();
    Ok((counts, complete))
}

/// `GET /NAME/-/search`, with its `.json` and `.csv` forms.
pub async fn search_page(
    State(state): State<Arc<AppState>>,
    Path((name, segment)): Path<(String, String)>,
    client: Option<Extension<ClientAddr>>,
    RawQuery(raw): RawQuery,
) -> Response {
    let params = Params::parse(raw.as_deref());
    let data = Format::of(&segment, &params).is_ok_and(|(_, f)| f.is_data());
    guarded(state, client, data, move |st| {
        let (segment, format) = Format::of(&segment, &params)?;
        if segment != "search" {
            return Err(WebError::NotFound("no such page".into()));
        }
        let (_, catalog) = catalog_of(st, &name)?;
        let page = params.page()?;
        let form = SearchForm::from(&params);
        let base = format!("/{}", encode_str(&name));
        let row = catalog_row(&catalog)?;
        let search = parse_search(st, &form)?;
        let fq = FacetQuery::parse(&params)?;
        let (records, more) = run_search(st, &catalog, &search, &fq.narrowing, page)?;
        let here = format!("{base}/-/search");
        let facets = if !facets_available(&catalog)? {
            None
        } else if search.is_narrowing_only() {
            Some(views(&fq, &here, indexed_counts(&catalog, &fq, &[])?, true))
        } else {
            let (counts, complete) = search_counts(st, &catalog, &search, &fq)?;
            Some(views(&fq, &here, counts, complete))
        };
        let f2 = form.clone();
        // The form's own fields carry the template.
        let narrowed = narrowing_query(&fq.narrowing.without(Facet::Template));
        list_reply(ListReply {
            format,
            catalog: &name,
            heading: format!("Search {name}"),
            records,
            more,
            page,
            here: &here,
            query: move |p| f2.query_string(p, &narrowed),
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
            facets,
            hidden: hidden_fields(&fq.narrowing.without(Facet::Template)),
        })
    })
    .await
}
