//! OAI identifiers and set specs: reversible, within the alphabets the schemas allow.
//!
//! An item is `oai:REPOSITORY-ID:TEMPLATE/URL` (the oai-identifier scheme). Its local
//! part may hold `a-z A-Z 0-9 - _ . ! ~ * ' ( ) ; / ? : @ & = + $ , %`: every other byte
//! of the template and the URL (UTF-8 or not) is percent-encoded as `%XX`, and so are `%`
//! itself and, in the template, `/` (the first `/` separates template and URL). The same
//! URL under two templates is two items; the identifier depends on nothing but the
//! repository, template and URL, so it is stable across reloads, and
//! [`parse_identifier`] gives the template and URL back.
//!
//! A set is a template. A setSpec may only hold `A-Z a-z 0-9 - _ . ! ~ * ' ( )` (and `:`
//! between levels, unused here): other bytes, and `~` itself, are written `~XX`.

/// Bytes allowed as they are in an identifier's local part (besides alphanumerics).
const ID_MARKS: &[u8] = b"-_.!~*'();/?:@&=+$,";

/// Bytes allowed as they are in a setSpec (besides alphanumerics); `~` is the escape.
const SET_MARKS: &[u8] = b"-_.!*'()";

fn push_escaped(out: &mut String, bytes: &[u8], escape: u8, keep: impl Fn(u8) -> bool) {
    for &b in bytes {
        if keep(b) {
            out.push(char::from(b));
        } else {
            out.push(char::from(escape));
            out.push_str(&format!("{b:02X}"));
        }
    }
}

fn unescape(text: &str, escape: u8) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == escape {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

/// The identifier of `url` under `template` in repository `repo`.
pub fn identifier(repo: &str, template: &[u8], url: &[u8]) -> String {
    let mut out = format!("oai:{repo}:");
    push_escaped(&mut out, template, b'%', |b| {
        b.is_ascii_alphanumeric() || (ID_MARKS.contains(&b) && b != b'/')
    });
    out.push('/');
    push_escaped(&mut out, url, b'%', |b| {
        b.is_ascii_alphanumeric() || ID_MARKS.contains(&b)
    });
    out
}

/// The template and URL of an identifier of repository `repo`, or `None` when it is not
/// one of this repository's.
pub fn parse_identifier(repo: &str, id: &str) -> Option<(Vec<u8>, Vec<u8>)> {
    let local = id
        .strip_prefix("oai:")?
        .strip_prefix(repo)?
        .strip_prefix(':')?;
    let (template, url) = local.split_once('/')?;
    if template.is_empty() || url.is_empty() {
        return None;
    }
    let ok = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || ID_MARKS.contains(&b) || b == b'%')
    };
    if !ok(template) || !ok(url) {
        return None;
    }
    Some((unescape(template, b'%')?, unescape(url, b'%')?))
}

/// The repository, template and URL of an identifier in this scheme from any repository
/// (what a harvester of `soif serve` reads back); unlike [`parse_identifier`] it does not
/// check the local part's alphabet, only that its escapes decode.
pub fn split_identifier(id: &str) -> Option<(&str, Vec<u8>, Vec<u8>)> {
    let rest = id.strip_prefix("oai:")?;
    let (repo, local) = rest.split_once(':')?;
    let (template, url) = local.split_once('/')?;
    if template.is_empty() || url.is_empty() {
        return None;
    }
    Some((repo, unescape(template, b'%')?, unescape(url, b'%')?))
}

/// The setSpec of a template.
pub fn set_spec(template: &[u8]) -> String {
    let mut out = String::new();
    push_escaped(&mut out, template, b'~', |b| {
        b.is_ascii_alphanumeric() || SET_MARKS.contains(&b)
    });
    out
}

/// The template of a setSpec, or `None` when it is not one this repository writes.
pub fn parse_set_spec(spec: &str) -> Option<Vec<u8>> {
    if spec.is_empty()
        || !spec
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || SET_MARKS.contains(&b) || b == b'~')
    {
        return None;
    }
    unescape(spec, b'~')
}

/// Whether `id` is a repository identifier the oai-identifier scheme allows
/// (`[a-zA-Z][a-zA-Z0-9-]*(\.[a-zA-Z][a-zA-Z0-9-]*)+`).
pub fn valid_repository_id(id: &str) -> bool {
    let labels: Vec<&str> = id.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|l| {
            l.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_round_trip_whatever_the_bytes() {
        let cases: [(&[u8], &[u8]); 4] = [
            (b"FILE", b"ftp://ecrc.de/pub/ECRC-93-10.ps.Z"),
            (b"Dublin/Core", b"http://x/a b?c=%41#frag"),
            (b"T\xff<>", b"http://x/\x00\xe9\"{}|\\^`"),
            (b"DOCUMENT", b"gopher://x:70/1/~user"),
        ];
        for (t, u) in cases {
            let id = identifier("soif.example.org", t, u);
            assert!(id.bytes().all(|b| b.is_ascii_graphic()), "{id}");
            assert_eq!(
                parse_identifier("soif.example.org", &id),
                Some((t.to_vec(), u.to_vec())),
                "{id}"
            );
        }
        assert_eq!(
            identifier("a.b", b"FILE", b"http://x/a b"),
            "oai:a.b:FILE/http://x/a%20b"
        );
        assert_eq!(parse_identifier("a.b", "oai:other.b:FILE/x"), None);
        assert_eq!(parse_identifier("a.b", "oai:a.b:FILE"), None);
        assert_eq!(parse_identifier("a.b", "oai:a.b:FILE/%zz"), None);
    }

    #[test]
    fn any_repositorys_identifiers_split_into_repository_template_and_url() {
        let id = identifier("soif.example.org", b"Dublin/Core", b"http://x/a b");
        assert_eq!(
            split_identifier(&id),
            Some((
                "soif.example.org",
                b"Dublin/Core".to_vec(),
                b"http://x/a b".to_vec()
            ))
        );
        assert_eq!(split_identifier("oai:a.b:FILE"), None);
        assert_eq!(split_identifier("oai:a.b:/x"), None);
        assert_eq!(split_identifier("oai:a.b:FILE/%zz"), None);
    }

    #[test]
    fn set_specs_round_trip() {
        for t in [&b"FILE"[..], b"Dublin-Core", b"Embed<1>", b"a~b:c", b"\xff"] {
            let s = set_spec(t);
            assert!(
                s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b)),
                "{s}"
            );
            assert_eq!(parse_set_spec(&s).as_deref(), Some(t));
        }
        assert_eq!(parse_set_spec("a:b"), None);
        assert!(valid_repository_id("soif.example.org"));
        assert!(!valid_repository_id("localhost"));
        assert!(!valid_repository_id("1x.org"));
    }
}
