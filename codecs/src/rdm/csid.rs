//! [`Csid`]: a Catalog Service ID, `x-catalog://host:port/name`.
//!
//! The note: "CSIDs are encoded in the URL syntax using the access method x-catalog … The
//! CSID has a dual purpose: (1) to identify the host, port of the RDM server, and (2) to
//! identify the catalog to which the request applies."
//!
//! ```
//! use soif_codecs::rdm::Csid;
//! let csid: Csid = "x-catalog://www.netscape.com:80/techpubs".parse().unwrap();
//! assert_eq!(csid.host, "www.netscape.com");
//! assert_eq!(csid.port, Some(80));
//! assert_eq!(csid.name, "techpubs");
//! assert_eq!(csid.endpoint(), "http://www.netscape.com:80/rdm/incoming");
//! assert_eq!(csid.to_string(), "x-catalog://www.netscape.com:80/techpubs");
//! ```

use super::RdmError;
use std::fmt;
use std::str::FromStr;

/// The URL scheme of a CSID.
pub const CSID_SCHEME: &str = "x-catalog";

/// A parsed Catalog Service ID.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Csid {
    /// Host name or address; an IPv6 address keeps its brackets (`[::1]`).
    pub host: String,
    /// The port, when written. RDM runs over HTTP, so [`Csid::port_or_default`] is 80.
    pub port: Option<u16>,
    /// The catalog's name: everything after the first `/` following the authority. May be
    /// empty (`x-catalog://host:80/`), meaning the server's default catalog.
    pub name: String,
}

impl Csid {
    /// A CSID from its parts.
    pub fn new(host: impl Into<String>, port: Option<u16>, name: impl Into<String>) -> Csid {
        Csid {
            host: host.into(),
            port,
            name: name.into(),
        }
    }

    /// True when `s` starts with `x-catalog://` (any case): tells a CSID apart from a path
    /// or an `http://` URL on the command line.
    pub fn is_csid(s: &str) -> bool {
        s.len() > CSID_SCHEME.len() + 3
            && s.is_char_boundary(CSID_SCHEME.len() + 3)
            && s[..CSID_SCHEME.len() + 3].eq_ignore_ascii_case("x-catalog://")
    }

    /// Parses `x-catalog://host[:port][/name]`.
    pub fn parse(s: &str) -> Result<Csid, RdmError> {
        let invalid = |reason: &str| {
            RdmError::invalid(
                "Catalog-Service-ID",
                s,
                format!("{reason} (expected x-catalog://host:port/name)"),
            )
        };
        let trimmed = s.trim();
        if !Csid::is_csid(trimmed) {
            return Err(invalid("not an x-catalog:// URL"));
        }
        let rest = &trimmed[CSID_SCHEME.len() + 3..];
        let (authority, name) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            // [::1]:8080
            let close = v6.find(']').ok_or_else(|| invalid("unclosed [ in host"))?;
            let host = &authority[..close + 2];
            match &v6[close + 1..] {
                "" => (host, None),
                p => match p.strip_prefix(':') {
                    Some(port) => (host, Some(port)),
                    None => return Err(invalid("junk after ]")),
                },
            }
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(invalid("no host"));
        }
        if host
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '@' | '?' | '#'))
        {
            return Err(invalid("bad character in host"));
        }
        let port = match port {
            Some(p) => Some(p.parse::<u16>().map_err(|_| invalid("bad port"))?),
            None => None,
        };
        if name.chars().any(|c| c.is_whitespace()) {
            return Err(invalid("whitespace in catalog name"));
        }
        Ok(Csid::new(host, port, name))
    }

    /// The port, or 80 (HTTP's) when the CSID does not say.
    pub fn port_or_default(&self) -> u16 {
        self.port.unwrap_or(80)
    }

    /// The RDM endpoint of the server this CSID names: `http://host:port/rdm/incoming`.
    pub fn endpoint(&self) -> String {
        format!(
            "http://{}:{}/rdm/incoming",
            self.host,
            self.port_or_default()
        )
    }
}

impl fmt::Display for Csid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{CSID_SCHEME}://{}", self.host)?;
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        write!(f, "/{}", self.name)
    }
}

impl FromStr for Csid {
    type Err = RdmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Csid::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_examples() {
        // "x-catalog://host:port/name (e.g., x-catalog://www.netscape.com:80/techpubs)"
        let c = Csid::parse("x-catalog://www.netscape.com:80/techpubs").unwrap();
        assert_eq!(c, Csid::new("www.netscape.com", Some(80), "techpubs"));
        let c = Csid::parse("x-catalog://powell.mcom.com:80/wwwdvl").unwrap();
        assert_eq!(c.name, "wwwdvl");
        assert_eq!(c.to_string(), "x-catalog://powell.mcom.com:80/wwwdvl");
    }

    #[test]
    fn optional_parts() {
        let c = Csid::parse("X-Catalog://localhost").unwrap();
        assert_eq!((c.port, c.name.as_str()), (None, ""));
        assert_eq!(c.port_or_default(), 80);
        assert_eq!(c.to_string(), "x-catalog://localhost/");
        let c = Csid::parse("x-catalog://[::1]:8080/a/b").unwrap();
        assert_eq!(
            (c.host.as_str(), c.port, c.name.as_str()),
            ("[::1]", Some(8080), "a/b")
        );
        assert_eq!(c.endpoint(), "http://[::1]:8080/rdm/incoming");
    }

    #[test]
    fn rejects() {
        for bad in [
            "http://www.netscape.com/techpubs",
            "x-catalog://",
            "x-catalog://:80/x",
            "x-catalog://host:99999/x",
            "x-catalog://host:http/x",
            "x-catalog://[::1/x",
            "x-catalog://host:80/tech pubs",
            "x-catalog://user@host/x",
        ] {
            let e = Csid::parse(bad).unwrap_err();
            assert!(e.to_string().contains("Catalog-Service-ID"), "{bad}: {e}");
        }
    }
}
