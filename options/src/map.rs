//! [`OptionMap`]: options given as a flat map of strings, as Spark hands them over and as
//! Python keyword arguments become, read by the same typed parsers.
//!
//! Keys are matched case-insensitively and without `_` or `-`, so `maxRecordSize`
//! (Spark's spelling), `max_record_size` (Python's and the pipeline file's) and
//! `MAXRECORDSIZE` are one option. A parser takes the options it knows
//! ([`OptionMap::take`] and the typed getters); [`OptionMap::finish`] then reports any
//! left over as unknown, suggesting the one meant or naming the ones that are known, in
//! the front end's spelling ([`OptionMap::spark`]: Spark's `maxRecordSize`).

use crate::error::normalise;
use crate::size::ByteSize;
use crate::OptionError;

/// Options as (key, value) strings; see the [module documentation](self).
#[derive(Debug, Clone, Default)]
pub struct OptionMap {
    entries: Vec<Entry>,
    /// The names asked for so far, as the parsers spell them (for the unknown-option
    /// message).
    known: Vec<&'static str>,
    /// Spark's spelling of the known names (`maxRecordSize`) in the unknown-option
    /// message, rather than `max_record_size`.
    camel_case: bool,
}

#[derive(Debug, Clone)]
struct Entry {
    key: String,
    value: String,
    taken: bool,
}

impl OptionMap {
    /// The options; the same option given twice (in any spelling) is an error.
    pub fn new<I, K, V>(pairs: I) -> Result<OptionMap, OptionError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut entries: Vec<Entry> = Vec::new();
        for (k, v) in pairs {
            let key = k.into();
            let norm = normalise(&key);
            if let Some(first) = entries.iter().find(|e| normalise(&e.key) == norm) {
                return Err(OptionError::Duplicate {
                    first: first.key.clone(),
                    second: key,
                });
            }
            entries.push(Entry {
                key,
                value: v.into(),
                taken: false,
            });
        }
        Ok(OptionMap {
            entries,
            known: Vec::new(),
            camel_case: false,
        })
    }

    /// As [`new`](Self::new), for Spark's options: an unknown option's message spells
    /// the known ones as Spark's documentation does (`maxRecordSize`).
    pub fn spark<I, K, V>(pairs: I) -> Result<OptionMap, OptionError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let mut map = OptionMap::new(pairs)?;
        map.camel_case = true;
        Ok(map)
    }

    /// The option `name` (in any spelling), as (key as given, value), once: a second
    /// `take` of the same name finds nothing.
    pub fn take(&mut self, name: &'static str) -> Option<(String, String)> {
        if !self.known.contains(&name) {
            self.known.push(name);
        }
        let norm = normalise(name);
        let e = self
            .entries
            .iter_mut()
            .find(|e| !e.taken && normalise(&e.key) == norm)?;
        e.taken = true;
        Some((e.key.clone(), e.value.clone()))
    }

    /// A string option.
    pub fn string(&mut self, name: &'static str) -> Option<String> {
        self.take(name).map(|(_, v)| v)
    }

    /// A boolean option: `true`/`false`, `1`/`0`, `yes`/`no` (any case).
    pub fn bool(&mut self, name: &'static str) -> Result<Option<bool>, OptionError> {
        let Some((key, value)) = self.take(name) else {
            return Ok(None);
        };
        match value.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Ok(Some(true)),
            "false" | "0" | "no" => Ok(Some(false)),
            _ => Err(OptionError::invalid(key, value, "true or false")),
        }
    }

    /// A size option (see [`ByteSize`]).
    pub fn size(&mut self, name: &'static str) -> Result<Option<ByteSize>, OptionError> {
        let Some((key, value)) = self.take(name) else {
            return Ok(None);
        };
        value
            .parse()
            .map(Some)
            .map_err(|e: crate::SizeError| OptionError::invalid(key, value, e.expected()))
    }

    /// A positive size option.
    pub fn positive_size(&mut self, name: &'static str) -> Result<Option<ByteSize>, OptionError> {
        let Some((key, value)) = self.take(name) else {
            return Ok(None);
        };
        match value.parse::<ByteSize>() {
            Ok(s) if s.as_u64() > 0 => Ok(Some(s)),
            Ok(_) => Err(OptionError::invalid(key, value, "a positive size")),
            Err(e) => Err(OptionError::invalid(key, value, e.expected())),
        }
    }

    /// An option read by `parse`, whose error is described by `expected`.
    pub fn parse<T>(
        &mut self,
        name: &'static str,
        expected: &str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<Option<T>, OptionError> {
        let Some((key, value)) = self.take(name) else {
            return Ok(None);
        };
        match parse(value.trim()) {
            Some(v) => Ok(Some(v)),
            None => Err(OptionError::invalid(key, value, expected)),
        }
    }

    /// Every option was taken, or the first that was not is reported as unknown.
    pub fn finish(self) -> Result<(), OptionError> {
        match self.entries.into_iter().find(|e| !e.taken) {
            None => Ok(()),
            Some(e) => {
                let camel_case = self.camel_case;
                let known =
                    self.known
                        .iter()
                        .map(|k| if camel_case { camel(k) } else { k.to_string() });
                Err(OptionError::unknown(e.key, known))
            }
        }
    }
}

/// `max_record_size` as Spark spells it: `maxRecordSize` (a name without `_` as it is).
fn camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::size::SIZE_EXAMPLES;

    #[test]
    fn keys_are_matched_in_any_case_and_spelling() {
        for key in [
            "maxRecordSize",
            "max_record_size",
            "MAXRECORDSIZE",
            "max-record-size",
        ] {
            let mut m = OptionMap::new([(key, "1kB")]).unwrap();
            assert_eq!(
                m.size("max_record_size").unwrap(),
                Some(ByteSize::b(1000)),
                "{key}"
            );
            m.finish().unwrap();
        }
    }

    #[test]
    fn mistakes_name_the_option_as_given() {
        let mut m = OptionMap::new([("Lenient", "maybe")]).unwrap();
        let e = m.bool("lenient").unwrap_err();
        assert_eq!(
            e.to_string(),
            "option Lenient=`maybe`: expected true or false"
        );

        let mut m = OptionMap::new([("maxRecordSize", "big")]).unwrap();
        let e = m.size("max_record_size").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("option maxRecordSize=`big`: expected {SIZE_EXAMPLES}")
        );

        let mut m = OptionMap::new([("lenient", "true"), ("lenent", "true")]).unwrap();
        assert_eq!(m.bool("lenient").unwrap(), Some(true));
        assert_eq!(m.size("max_record_size").unwrap(), None);
        let e = m.finish().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown option `lenent` (did you mean `lenient`?)"
        );
        let mut m = OptionMap::new([("colour", "red")]).unwrap();
        assert_eq!(m.bool("lenient").unwrap(), None);
        assert_eq!(m.size("max_record_size").unwrap(), None);
        assert_eq!(
            m.finish().unwrap_err().to_string(),
            "unknown option `colour` (known: lenient, max_record_size)"
        );
        // Spark's source hands its options over in lower case: the suggestion is in
        // Spark's spelling.
        let mut m = OptionMap::spark([("maxrecordsise", "1")]).unwrap();
        assert_eq!(m.size("max_record_size").unwrap(), None);
        assert_eq!(
            m.finish().unwrap_err().to_string(),
            "unknown option `maxrecordsise` (did you mean `maxRecordSize`?)"
        );

        let e = OptionMap::new([("maxRecordSize", "1"), ("max_record_size", "2")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "option `max_record_size` is given twice (also as `maxRecordSize`)"
        );
    }
}
