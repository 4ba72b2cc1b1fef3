//! [`ByteSize`]: a number of bytes, written as a number or with a unit.
//!
//! One meaning everywhere (CLI flags, pipeline files, Python, Spark, `soif-gen`):
//!
//! | written | bytes |
//! |---------|-------|
//! | `1010` (a bare number) | 1,010 |
//! | `1kB`, `1KB`, `1k` | 1,000 |
//! | `1KiB`, `1Ki` | 1,024 |
//! | `64MB`, `64M` | 64,000,000 |
//! | `64MiB`, `64Mi` | 67,108,864 |
//! | `1GB`, `1G` / `1GiB` | 10^9 / 2^30 (and `T`, `P`, `E` likewise) |
//!
//! Units are case-insensitive (`b` is a byte, never a bit), a space may stand between
//! the number and the unit, and a decimal fraction is allowed (`1.5MB`). The grammar is
//! the `bytesize` crate's; this type adds an error for sizes that do not fit in 64 bits
//! and a [`Display`](std::fmt::Display) that writes the size back exactly.

use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::fmt;
use std::str::FromStr;

/// A number of bytes (see the [module documentation](self) for how it is written).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(u64);

/// What was wrong with a size as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("`{0}` is not a size (e.g. 1048576, 512KiB, 64MB, 1GiB)")]
    Invalid(String),
    #[error("`{0}` is too large")]
    TooLarge(String),
}

/// What a size looks like, for error messages.
pub const SIZE_EXAMPLES: &str = "a size in bytes (e.g. 1048576, 512KiB, 64MB, 1GiB)";

impl SizeError {
    /// What was expected instead, as an [`OptionError`](crate::OptionError) says it.
    pub fn expected(&self) -> &'static str {
        match self {
            SizeError::Invalid(_) => SIZE_EXAMPLES,
            SizeError::TooLarge(_) => "a size below 16EiB",
        }
    }
}

impl ByteSize {
    /// `n` bytes.
    pub const fn b(n: u64) -> ByteSize {
        ByteSize(n)
    }

    /// `n` KiB (2^10 bytes each).
    pub const fn kib(n: u64) -> ByteSize {
        ByteSize(n << 10)
    }

    /// `n` MiB (2^20 bytes each).
    pub const fn mib(n: u64) -> ByteSize {
        ByteSize(n << 20)
    }

    /// `n` GiB (2^30 bytes each).
    pub const fn gib(n: u64) -> ByteSize {
        ByteSize(n << 30)
    }

    /// `n` MB (10^6 bytes each).
    pub const fn mb(n: u64) -> ByteSize {
        ByteSize(n * 1_000_000)
    }

    /// The number of bytes.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// The number of bytes as a `usize` (saturating on a platform whose `usize` is
    /// smaller than the size, where no such buffer could exist anyway).
    pub fn as_usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl From<u64> for ByteSize {
    fn from(n: u64) -> ByteSize {
        ByteSize(n)
    }
}

impl From<usize> for ByteSize {
    fn from(n: usize) -> ByteSize {
        ByteSize(n as u64)
    }
}

impl From<ByteSize> for u64 {
    fn from(s: ByteSize) -> u64 {
        s.0
    }
}

impl FromStr for ByteSize {
    type Err = SizeError;

    fn from_str(s: &str) -> Result<ByteSize, SizeError> {
        let t = s.trim();
        // A sign, or nothing at all, is not a size (the crate would read `+1` as 1).
        if !t.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            return Err(SizeError::Invalid(s.to_string()));
        }
        if t.bytes().all(|b| b.is_ascii_digit()) {
            // A bare number of bytes, which the crate cannot tell from a bad unit when it
            // does not fit.
            return t
                .parse()
                .map(ByteSize)
                .map_err(|_| SizeError::TooLarge(s.to_string()));
        }
        let n = t
            .parse::<bytesize::ByteSize>()
            .map_err(|_| SizeError::Invalid(s.to_string()))?
            .as_u64();
        // The crate saturates: a size at the top of the range was too large to hold,
        // unless it was written as that very number.
        if n == u64::MAX && t != u64::MAX.to_string() {
            return Err(SizeError::TooLarge(s.to_string()));
        }
        Ok(ByteSize(n))
    }
}

/// The units [`Display`](fmt::Display) may write, largest first.
const UNITS: [(u64, &str); 12] = [
    (1 << 60, "EiB"),
    (1_000_000_000_000_000_000, "EB"),
    (1 << 50, "PiB"),
    (1_000_000_000_000_000, "PB"),
    (1 << 40, "TiB"),
    (1_000_000_000_000, "TB"),
    (1 << 30, "GiB"),
    (1_000_000_000, "GB"),
    (1 << 20, "MiB"),
    (1_000_000, "MB"),
    (1 << 10, "KiB"),
    (1_000, "kB"),
];

/// The size exactly, in the largest unit that divides it (`64MiB`, `64MB`, `1010`), so
/// that it parses back to the same number.
impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n != 0 {
            if let Some((factor, unit)) = UNITS.iter().find(|(factor, _)| n.is_multiple_of(*factor))
            {
                return write!(f, "{}{unit}", n / factor);
            }
        }
        write!(f, "{n}")
    }
}

/// A number of bytes, or a string as [`FromStr`] reads it.
impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ByteSize, D::Error> {
        struct V;

        impl Visitor<'_> for V {
            type Value = ByteSize;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(SIZE_EXAMPLES)
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(n))
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<ByteSize, E> {
                u64::try_from(n)
                    .map(ByteSize)
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(n), &self))
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<ByteSize, E> {
                s.parse()
                    .map_err(|e: SizeError| E::invalid_value(de::Unexpected::Str(s), &e.expected()))
            }
        }

        d.deserialize_any(V)
    }
}

impl serde::Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<u64, SizeError> {
        s.parse::<ByteSize>().map(ByteSize::as_u64)
    }

    #[test]
    fn decimal_and_binary_units() {
        assert_eq!(parse("64MB"), Ok(64_000_000));
        assert_eq!(parse("64mb"), Ok(64_000_000));
        assert_eq!(parse("64M"), Ok(64_000_000));
        assert_eq!(parse("64MiB"), Ok(64 << 20));
        assert_eq!(parse("64mib"), Ok(64 << 20));
        assert_eq!(parse("1kB"), Ok(1_000));
        assert_eq!(parse("1KB"), Ok(1_000));
        assert_eq!(parse("1k"), Ok(1_000));
        assert_eq!(parse("1KiB"), Ok(1_024));
        assert_eq!(parse("1GB"), Ok(1_000_000_000));
        assert_eq!(parse("1G"), Ok(1_000_000_000));
        assert_eq!(parse("1GiB"), Ok(1 << 30));
        assert_eq!(parse("2TiB"), Ok(2 << 40));
        assert_eq!(parse("64 MB"), Ok(64_000_000));
        assert_eq!(parse(" 64MiB "), Ok(64 << 20));
        assert_eq!(parse("1.5MB"), Ok(1_500_000));
        assert_eq!(parse("7B"), Ok(7));
    }

    #[test]
    fn a_bare_number_is_bytes() {
        assert_eq!(parse("0"), Ok(0));
        assert_eq!(parse("1010"), Ok(1010));
        assert_eq!(parse("1048576"), Ok(1 << 20));
        assert_eq!(parse("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn errors_name_the_input() {
        for bad in [
            "",
            " ",
            "MB",
            "12 parsecs",
            "-1",
            "+1",
            "1e3",
            "1.2.3MB",
            "64 M B",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e, SizeError::Invalid(bad.to_string()), "{bad:?}");
            assert!(e.to_string().contains(&format!("`{bad}`")), "{e}");
        }
        for huge in [
            "99999999999999999999G",
            "20000000000EB",
            "18446744073709551616",
        ] {
            assert_eq!(
                parse(huge),
                Err(SizeError::TooLarge(huge.to_string())),
                "{huge}"
            );
        }
    }

    #[test]
    fn display_writes_the_exact_size_back() {
        for (n, text) in [
            (0, "0"),
            (1010, "1010"),
            (1000, "1kB"),
            (1024, "1KiB"),
            (64_000_000, "64MB"),
            (64 << 20, "64MiB"),
            (1 << 30, "1GiB"),
            (1_500_000, "1500kB"),
        ] {
            assert_eq!(ByteSize::b(n).to_string(), text);
            assert_eq!(parse(text), Ok(n), "{text}");
        }
    }

    #[test]
    fn deserialises_from_a_number_or_a_string() {
        #[derive(serde::Deserialize)]
        struct T {
            a: ByteSize,
            b: ByteSize,
        }
        let t: T = toml::from_str("a = 1010\nb = \"64MB\"\n").unwrap();
        assert_eq!((t.a.as_u64(), t.b.as_u64()), (1010, 64_000_000));
        let e = toml::from_str::<T>("a = -1\nb = \"1\"\n").err().unwrap();
        assert!(e.to_string().contains("a size in bytes"), "{e}");
        let e = toml::from_str::<T>("a = 1\nb = \"12 parsecs\"\n")
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .contains("invalid value: string \"12 parsecs\", expected a size in bytes"),
            "{e}"
        );
    }
}
