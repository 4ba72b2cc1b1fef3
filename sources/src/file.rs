//! Local inputs: files, directories, globs and stdin.
//!
//! [`expand`] turns what the user typed into the list of inputs to read, in a stable
//! order: a directory is read recursively with its files sorted by path (hidden files
//! and directories, whose names start with `.`, are left out); a pattern with `*`, `?` or
//! `[` is a glob whose matches are sorted; `-` is stdin; `http://`, `https://` and
//! `x-catalog://` (an RDM catalog, see [`crate::catalog`]) are URLs. No inputs at all means stdin.

use crate::InputSpec;
use soif_pipeline::Error;
use std::path::{Path, PathBuf};

/// Expands inputs as typed into concrete inputs (see the module doc).
pub fn expand(inputs: &[String]) -> Result<Vec<InputSpec>, Error> {
    if inputs.is_empty() {
        return Ok(vec![InputSpec::Stdin]);
    }
    let mut out = Vec::new();
    for input in inputs {
        if input == "-" {
            out.push(InputSpec::Stdin);
        } else if input.starts_with("http://")
            || input.starts_with("https://")
            || crate::catalog::is_catalog(input)
        {
            out.push(InputSpec::Url(input.clone()));
        } else if Path::new(input).is_dir() {
            let mut files = Vec::new();
            walk(Path::new(input), &mut files)?;
            files.sort();
            out.extend(files.into_iter().map(InputSpec::File));
        } else if input.contains(['*', '?', '[']) && !Path::new(input).exists() {
            let paths = glob::glob(input)
                .map_err(|e| Error::Config(format!("bad glob pattern {input:?}: {e}")))?;
            let mut files = Vec::new();
            for p in paths {
                let p = p.map_err(|e| {
                    let path = e.path().to_path_buf();
                    Error::io_path(&path, e.into())
                })?;
                if p.is_dir() {
                    walk(&p, &mut files)?;
                } else {
                    files.push(p);
                }
            }
            if files.is_empty() {
                return Err(Error::Config(format!("no input matches {input:?}")));
            }
            files.sort();
            out.extend(files.into_iter().map(InputSpec::File));
        } else {
            let path = PathBuf::from(input);
            // Checked now so a typo fails before anything is written.
            std::fs::metadata(&path).map_err(|e| Error::io_path(&path, e))?;
            out.push(InputSpec::File(path));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io_path(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io_path(dir, e))?;
        if entry.file_name().as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| Error::io_path(&path, e))?;
        if kind.is_dir() {
            walk(&path, out)?;
        } else if kind.is_file() || (kind.is_symlink() && path.is_file()) {
            out.push(path);
        }
    }
    Ok(())
}

/// The size of a file input, for the progress bar.
pub fn size(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_and_globs_are_sorted() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.soif", "a.soif", ".hidden", "sub/c.soif"] {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let got = expand(&[dir.path().display().to_string()]).unwrap();
        let names: Vec<_> = got.iter().map(|s| s.name()).collect();
        let d = dir.path().display();
        assert_eq!(
            names,
            [
                format!("{d}/a.soif"),
                format!("{d}/b.soif"),
                format!("{d}/sub/c.soif")
            ]
        );
        let got = expand(&[format!("{d}/*.soif")]).unwrap();
        assert_eq!(got.len(), 2);
        assert!(expand(&[format!("{d}/*.none")]).unwrap_err().is_config());
        assert!(expand(&[format!("{d}/missing.soif")]).is_err());
        assert!(matches!(expand(&[]).unwrap()[..], [InputSpec::Stdin]));
    }
}
