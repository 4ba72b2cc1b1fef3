//! A request's arguments, checked as the protocol says (section 3.1 and 4): the verb,
//! repeated, unknown, missing and exclusive arguments, and the values' syntax.

/// A protocol error: its code and a message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OaiError {
    pub code: &'static str,
    pub message: String,
}

impl OaiError {
    pub fn new(code: &'static str, message: impl Into<String>) -> OaiError {
        OaiError {
            code,
            message: message.into(),
        }
    }

    /// Whether the `<request>` element must then carry no attributes (section 3.2: "in
    /// cases where the request that generated this response resulted in a badVerb or
    /// badArgument error condition, the repository must return the base URL of the
    /// protocol request only").
    pub fn bare_request(&self) -> bool {
        matches!(self.code, "badVerb" | "badArgument")
    }
}

/// The six verbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Identify,
    ListMetadataFormats,
    ListSets,
    ListIdentifiers,
    ListRecords,
    GetRecord,
}

impl Verb {
    fn parse(s: &str) -> Option<Verb> {
        Some(match s {
            "Identify" => Verb::Identify,
            "ListMetadataFormats" => Verb::ListMetadataFormats,
            "ListSets" => Verb::ListSets,
            "ListIdentifiers" => Verb::ListIdentifiers,
            "ListRecords" => Verb::ListRecords,
            "GetRecord" => Verb::GetRecord,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Identify => "Identify",
            Verb::ListMetadataFormats => "ListMetadataFormats",
            Verb::ListSets => "ListSets",
            Verb::ListIdentifiers => "ListIdentifiers",
            Verb::ListRecords => "ListRecords",
            Verb::GetRecord => "GetRecord",
        }
    }

    /// The arguments the verb takes besides `verb`.
    fn allowed(self) -> &'static [&'static str] {
        match self {
            Verb::Identify => &[],
            Verb::ListMetadataFormats => &["identifier"],
            Verb::ListSets => &["resumptionToken"],
            Verb::ListIdentifiers | Verb::ListRecords => {
                &["metadataPrefix", "from", "until", "set", "resumptionToken"]
            }
            Verb::GetRecord => &["identifier", "metadataPrefix"],
        }
    }
}

/// A checked request.
#[derive(Debug, Clone, Default)]
pub struct Args {
    pub verb: Option<Verb>,
    pub identifier: Option<String>,
    pub prefix: Option<String>,
    /// Inclusive bounds, at second granularity (a day is its first or last second).
    pub from: Option<String>,
    pub until: Option<String>,
    pub set: Option<String>,
    pub token: Option<String>,
    /// The arguments as received (for the `<request>` element), verb first.
    pub pairs: Vec<(String, String)>,
}

/// The value pattern of `metadataPrefix` (`metadataPrefixType`).
fn valid_prefix(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b))
}

/// The value pattern of `set` (`setSpecType`).
fn valid_set(s: &str) -> bool {
    s.split(':').all(valid_prefix)
}

/// A `from` / `until` value: `(second-granularity bound, whether day granularity)`.
fn parse_date(s: &str, end_of_day: bool) -> Option<(String, bool)> {
    use chrono::{NaiveDate, NaiveDateTime};
    if s.len() == 10 {
        let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
        let t = if end_of_day { "23:59:59" } else { "00:00:00" };
        return Some((format!("{}T{t}Z", d.format("%Y-%m-%d")), true));
    }
    if s.len() == 20 && s.ends_with('Z') {
        let d = NaiveDateTime::parse_from_str(&s[..19], "%Y-%m-%dT%H:%M:%S").ok()?;
        return Some((format!("{}Z", d.format("%Y-%m-%dT%H:%M:%S")), false));
    }
    None
}

/// Checks the arguments of a request (form-decoded pairs, in order).
pub fn parse(pairs: Vec<(String, String)>) -> Result<Args, OaiError> {
    let verbs: Vec<&str> = pairs
        .iter()
        .filter(|(k, _)| k == "verb")
        .map(|(_, v)| v.as_str())
        .collect();
    let verb = match verbs.as_slice() {
        [] => return Err(OaiError::new("badVerb", "the request has no verb argument")),
        [one] => Verb::parse(one)
            .ok_or_else(|| OaiError::new("badVerb", format!("{one:?} is not an OAI-PMH verb")))?,
        _ => return Err(OaiError::new("badVerb", "the verb argument is repeated")),
    };
    let mut args = Args {
        verb: Some(verb),
        ..Args::default()
    };
    let mut seen: Vec<&str> = Vec::new();
    for (k, v) in &pairs {
        if k == "verb" {
            continue;
        }
        if seen.contains(&k.as_str()) {
            return Err(OaiError::new(
                "badArgument",
                format!("the argument {k} is repeated"),
            ));
        }
        seen.push(k);
        if !verb.allowed().contains(&k.as_str()) {
            return Err(OaiError::new(
                "badArgument",
                format!("{} takes no argument {k:?}", verb.as_str()),
            ));
        }
        let v = v.clone();
        match k.as_str() {
            "identifier" => {
                if v.is_empty() || v.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    return Err(OaiError::new("badArgument", "the identifier is not a URI"));
                }
                args.identifier = Some(v);
            }
            "metadataPrefix" => {
                if !valid_prefix(&v) {
                    return Err(OaiError::new(
                        "badArgument",
                        "the metadataPrefix has illegal characters",
                    ));
                }
                args.prefix = Some(v);
            }
            "set" => {
                if !valid_set(&v) {
                    return Err(OaiError::new("badArgument", "the set is not a setSpec"));
                }
                args.set = Some(v);
            }
            "from" => args.from = Some(v),
            "until" => args.until = Some(v),
            "resumptionToken" => args.token = Some(v),
            _ => {}
        }
    }
    if args.token.is_some() && seen.len() > 1 {
        return Err(OaiError::new(
            "badArgument",
            "resumptionToken is an exclusive argument: send it with the verb alone",
        ));
    }
    let needs_prefix = match verb {
        Verb::ListIdentifiers | Verb::ListRecords => args.token.is_none(),
        Verb::GetRecord => true,
        _ => false,
    };
    if needs_prefix && args.prefix.is_none() {
        return Err(OaiError::new(
            "badArgument",
            format!("{} needs a metadataPrefix", verb.as_str()),
        ));
    }
    if verb == Verb::GetRecord && args.identifier.is_none() {
        return Err(OaiError::new(
            "badArgument",
            "GetRecord needs an identifier",
        ));
    }
    let from = match &args.from {
        Some(f) => Some(parse_date(f, false).ok_or_else(|| {
            OaiError::new(
                "badArgument",
                format!("from {f:?} is not YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ"),
            )
        })?),
        None => None,
    };
    let until = match &args.until {
        Some(u) => Some(parse_date(u, true).ok_or_else(|| {
            OaiError::new(
                "badArgument",
                format!("until {u:?} is not YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ"),
            )
        })?),
        None => None,
    };
    if let (Some((f, fd)), Some((u, ud))) = (&from, &until) {
        if fd != ud {
            return Err(OaiError::new(
                "badArgument",
                "from and until have different granularities",
            ));
        }
        if f > u {
            return Err(OaiError::new("badArgument", "from is later than until"));
        }
    }
    args.from = from.map(|(f, _)| f);
    args.until = until.map(|(u, _)| u);
    let mut ordered = vec![("verb".to_string(), verb.as_str().to_string())];
    ordered.extend(pairs.into_iter().filter(|(k, _)| k != "verb"));
    args.pairs = ordered;
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(q: &[(&str, &str)]) -> Result<Args, OaiError> {
        parse(
            q.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn code(q: &[(&str, &str)]) -> &'static str {
        p(q).unwrap_err().code
    }

    #[test]
    fn verbs_and_arguments() {
        assert_eq!(code(&[]), "badVerb");
        assert_eq!(code(&[("verb", "Nope")]), "badVerb");
        assert_eq!(
            code(&[("verb", "Identify"), ("verb", "Identify")]),
            "badVerb"
        );
        assert_eq!(code(&[("verb", "Identify"), ("x", "1")]), "badArgument");
        assert_eq!(code(&[("verb", "ListRecords")]), "badArgument");
        assert_eq!(
            code(&[
                ("verb", "ListRecords"),
                ("metadataPrefix", "a"),
                ("metadataPrefix", "a")
            ]),
            "badArgument"
        );
        assert_eq!(
            code(&[
                ("verb", "ListRecords"),
                ("metadataPrefix", "oai_dc"),
                ("resumptionToken", "x")
            ]),
            "badArgument"
        );
        assert_eq!(
            code(&[("verb", "GetRecord"), ("metadataPrefix", "oai_dc")]),
            "badArgument"
        );
        assert_eq!(
            code(&[("verb", "ListRecords"), ("metadataPrefix", "a b")]),
            "badArgument"
        );
        assert!(p(&[("verb", "ListRecords"), ("resumptionToken", "x")]).is_ok());
    }

    #[test]
    fn dates_both_granularities_inclusive() {
        let a = p(&[
            ("verb", "ListIdentifiers"),
            ("metadataPrefix", "oai_dc"),
            ("from", "2001-01-01"),
            ("until", "2001-01-01"),
        ])
        .unwrap();
        assert_eq!(a.from.as_deref(), Some("2001-01-01T00:00:00Z"));
        assert_eq!(a.until.as_deref(), Some("2001-01-01T23:59:59Z"));
        let a = p(&[
            ("verb", "ListIdentifiers"),
            ("metadataPrefix", "oai_dc"),
            ("until", "2001-01-01T10:00:00Z"),
        ])
        .unwrap();
        assert_eq!(a.until.as_deref(), Some("2001-01-01T10:00:00Z"));
        let l = |f: &str, u: &str| {
            code(&[
                ("verb", "ListIdentifiers"),
                ("metadataPrefix", "oai_dc"),
                ("from", f),
                ("until", u),
            ])
        };
        assert_eq!(l("2002-01-01", "2001-01-01"), "badArgument");
        assert_eq!(l("2001-01-01", "2001-01-01T00:00:00Z"), "badArgument");
        assert_eq!(l("2001-13-01", "2002-01-01"), "badArgument");
        assert_eq!(
            l("2001-01-01T00:00:00", "2002-01-01T00:00:00"),
            "badArgument"
        );
    }
}
