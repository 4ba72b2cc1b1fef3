//! N-Triples lines exactly as the Oxigraph serialisers write them (`oxttl`'s N-Triples
//! serialiser writes `{triple} .` with `oxrdf`'s `Display` of the triple), made faster
//! for the one part that costs: the text of a literal.
//!
//! ```
//! use oxrdf::{LiteralRef, NamedNodeRef, TripleRef};
//! let t = TripleRef::new(
//!     NamedNodeRef::new_unchecked("http://example.org/"),
//!     NamedNodeRef::new_unchecked("http://purl.org/dc/terms/title"),
//!     LiteralRef::new_simple_literal("Home \"page\"\n"),
//! );
//! let mut line = String::new();
//! soif_sinks::rdf::ntriples::push_line(t, &mut line);
//! assert_eq!(line, format!("{t} .\n"));
//! ```
//!
//! `oxrdf` writes a literal one character at a time through `fmt::Formatter` (a call
//! through a `dyn fmt::Write` for each character), which made writing N-Triples take
//! most of a conversion's time: the records' values are nearly all of the output. Here a
//! literal's text is copied in runs between the characters N-Triples escapes, with the
//! same escapes; everything else (IRIs, blank nodes, the datatype) is `oxrdf`'s own
//! `Display`. A test checks the lines against `oxrdf`'s, byte for byte.

use oxrdf::vocab::xsd;
use oxrdf::{TermRef, TripleRef};
use std::fmt::Write as _;

/// Appends the N-Triples line of `t` (ending in ` .\n`) to `out`.
pub fn push_line(t: TripleRef<'_>, out: &mut String) {
    match t.object {
        TermRef::Literal(literal) if literal.language().is_none() => {
            push_display(format_args!("{} {} ", t.subject, t.predicate), out);
            push_quoted(literal.value(), out);
            if literal.datatype() != xsd::STRING {
                push_display(format_args!("^^{}", literal.datatype()), out);
            }
            out.push_str(" .\n");
        }
        _ => push_display(format_args!("{t} .\n"), out),
    }
}

/// Formats into a `String`, which cannot fail; a `Display` of `oxrdf` does not either.
fn push_display(args: std::fmt::Arguments<'_>, out: &mut String) {
    out.write_fmt(args)
        .unwrap_or_else(|_| unreachable!("oxrdf's Display writes into a String"));
}

/// Appends `text` quoted, with `oxrdf`'s escapes (`print_quoted_str`): `\b \t \n \f \r \" \\`,
/// other C0 controls, DEL, U+FFFE and U+FFFF as `\uXXXX`.
fn push_quoted(text: &str, out: &mut String) {
    out.reserve(text.len() + 2);
    out.push('"');
    let bytes = text.as_bytes();
    let mut run = 0;
    let mut i = next_suspect(bytes, 0);
    while i < bytes.len() {
        let escape = match bytes[i] {
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0C => "\\f",
            b'\r' => "\\r",
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0xEF if !matches!(bytes.get(i + 1..i + 3), Some([0xBF, 0xBE | 0xBF])) => {
                i = next_suspect(bytes, i + 1);
                continue;
            }
            _ => "",
        };
        out.push_str(&text[run..i]);
        let len = if bytes[i] == 0xEF { 3 } else { 1 };
        if escape.is_empty() {
            let c = text[i..i + len].chars().next().map_or(0, u32::from);
            push_display(format_args!("\\u{c:04X}"), out);
        } else {
            out.push_str(escape);
        }
        run = i + len;
        i = next_suspect(bytes, run);
    }
    out.push_str(&text[run..]);
    out.push('"');
}

/// The first byte at or after `from` that may start a character to escape: ASCII ones, or
/// 0xEF (U+FFFE and U+FFFF are `EF BF BE` and `EF BF BF`), so always a char boundary;
/// `bytes.len()` if none. Blocks without one are skipped whole (a loop the compiler
/// vectorises).
fn next_suspect(bytes: &[u8], from: usize) -> usize {
    // Bitwise operators, not `||`: no branch per byte, so the block loop vectorises.
    fn suspect(b: u8) -> bool {
        (b < 0x20) | (b == b'"') | (b == b'\\') | (b == 0x7F) | (b == 0xEF)
    }
    let rest = bytes.get(from..).unwrap_or_default();
    let mut blocks = rest.chunks_exact(16);
    let mut skipped = 0;
    for block in &mut blocks {
        if block
            .iter()
            .fold(0u8, |seen, &b| seen | u8::from(suspect(b)))
            != 0
        {
            break;
        }
        skipped += 16;
    }
    rest[skipped..]
        .iter()
        .position(|&b| suspect(b))
        .map_or(bytes.len(), |p| from + skipped + p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::{BlankNodeRef, LiteralRef, NamedNodeRef};
    use proptest::prelude::*;

    fn line(t: TripleRef<'_>) -> String {
        let mut out = String::new();
        push_line(t, &mut out);
        out
    }

    const S: NamedNodeRef<'static> = NamedNodeRef::new_unchecked("http://x/a%20b");
    const P: NamedNodeRef<'static> = NamedNodeRef::new_unchecked("urn:x-soif:record:1#Title");

    #[test]
    fn every_escape_as_oxrdf_writes_it() {
        let text = "\u{0}\u{8}\t\n\u{B}\u{C}\r\u{1F}\"\\\u{7F}\u{FFFD}\u{FFFE}\u{FFFF}\u{EFFF}é\u{10FFFF}x";
        for o in [
            LiteralRef::new_simple_literal(text),
            LiteralRef::new_typed_literal(text, xsd::BASE_64_BINARY),
            LiteralRef::new_language_tagged_literal_unchecked(text, "en"),
        ] {
            let t = TripleRef::new(S, P, o);
            assert_eq!(line(t), format!("{t} .\n"));
        }
        let b = TripleRef::new(BlankNodeRef::new_unchecked("r1"), P, S);
        assert_eq!(
            line(b),
            "_:r1 <urn:x-soif:record:1#Title> <http://x/a%20b> .\n"
        );
    }

    proptest! {
        #[test]
        fn lines_are_oxrdfs(text in "(\\PC|[\\x00-\\x1F\\x7F\\x{FFFE}\\x{FFFF}\\x{EFBF}\"\\\\]){0,60}", typed in any::<bool>()) {
            let o = if typed {
                LiteralRef::new_typed_literal(&text, xsd::BASE_64_BINARY)
            } else {
                LiteralRef::new_simple_literal(&text)
            };
            let t = TripleRef::new(S, P, o);
            prop_assert_eq!(line(t), format!("{t} .\n"));
        }
    }
}
