//! Reading a file the rules are configured by (an `@SCHEMA`, a `dc` mapping): whole, but
//! no larger than a bound, with errors that name it.

use crate::run_error::Error;
use std::io::Read;
use std::path::Path;

/// The bytes of the file `path` (a `what`, for messages): a file larger than `max`
/// bytes, or one that cannot be read, is an [`Error::Config`] naming it.
pub fn read_bounded(path: &Path, what: &str, max: u64) -> Result<Vec<u8>, Error> {
    let shown = path.display();
    let file = std::fs::File::open(path)
        .map_err(|e| Error::Config(format!("cannot open the {what} {shown}: {e}")))?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Error::Config(format!("cannot read the {what} {shown}: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(Error::Config(format!(
            "the {what} {shown} is larger than {} MiB",
            max >> 20
        )));
    }
    Ok(bytes)
}
