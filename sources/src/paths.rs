//! Which files a list of local paths names: the one path expansion of every front end —
//! the CLI and pipeline files (through [`crate::expand`], which adds stdin and URLs),
//! `soif.read`, Spark's Python data source and its JVM one.
//!
//! The rules, for each path in turn (the files of each path sorted, the paths in the
//! order given):
//!
//! - **A path that exists** is read as it is, even if its name holds `*`, `?` or `[`.
//! - **A directory** gives its files, sorted by path. Names starting with `.` (hidden
//!   files and directories) are left out; under [`PathRules::spark`] so are names
//!   starting with `_` (Spark's `_SUCCESS`, `_temporary/`), as Spark's own file sources
//!   do. Subdirectories are read when [`PathRules::recursive`] is set: always for the CLI
//!   and `soif.read`, with `recursiveFileLookup` for Spark.
//! - **A glob**, a path that does not exist and holds `*`, `?` or `[`: `*` and `?` match
//!   within one name, `[abc]`, `[a-z]` and `[!abc]` one character of it, and `**` (a
//!   whole component) any number of directories, none included, so `dumps/**/*.soif` is
//!   every `.soif` file under `dumps/` and `dumps/**` is `dumps/` and every directory
//!   under it (whose files are then read). A name starting with `.` is matched only by a pattern component that
//!   starts with `.` (`dumps/.*.soif`). The matches are sorted; a directory among them
//!   gives its files as above. A glob that matches nothing is an error
//!   ([`PathError::NoMatch`]).
//! - **A `file:` URI** (`file:///data/a.soif`, `file:/data/a.soif`,
//!   `file://localhost/data`) is its local path; one naming another host is an error.
//! - Anything else that does not exist is an error ([`PathError::NotFound`]).
//!
//! Symbolic links to files are read; links to directories are not followed inside a
//! directory (a loop cannot make a read endless), only when given or matched.
//!
//! A URI of another scheme (`s3://`, `s3a://`, `hdfs://`, `gs://`…) is no local path:
//! [`PathRules::is_remote`] says so, and Spark's data sources hand it to the filesystem
//! that reads it (the JVM one to the Python one, which lists it through `pyarrow.fs`).
//! What such a listing gives is decided here too, by the same rules and the same glob
//! matcher: [`select_listing`] takes a directory's listing (relative paths, file or
//! not) and a pattern or none, and returns the files to read, as [`expand_paths`]
//! would for the same tree on a local disk (a test checks both on one tree):
//!
//! ```
//! use soif_sources::paths::{select_listing, PathRules};
//!
//! let listing = [("a.soif", true), ("_SUCCESS", true), (".tmp/b.soif", true), ("sub/c.soif", true)];
//! let picked = select_listing(Some("**/*.soif"), &listing, PathRules::spark(false))?;
//! assert_eq!(picked, [0, 3]); // `**` and `*` pass no hidden name
//! let picked = select_listing(None, &listing, PathRules::spark(false))?;
//! assert_eq!(picked, [0]); // a directory: no `_` or `.` name, no subdirectory
//! # Ok::<(), soif_sources::PathError>(())
//! ```

use soif_pipeline::Error;
use std::path::{Path, PathBuf};

/// How paths are expanded: see the [module documentation](self).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathRules {
    /// Read a directory's subdirectories too.
    pub recursive: bool,
    /// Leave out names starting with `_` in directories (Spark's file sources' rule).
    pub spark: bool,
}

impl PathRules {
    /// The CLI's, pipeline files' and `soif.read`'s rules: directories read recursively,
    /// only hidden names left out.
    pub const CLI: PathRules = PathRules {
        recursive: true,
        spark: false,
    };

    /// Spark's rules: directories read recursively only with `recursiveFileLookup`,
    /// names starting with `.` or `_` left out.
    pub fn spark(recursive: bool) -> PathRules {
        PathRules {
            recursive,
            spark: true,
        }
    }

    /// Whether `path` names a file of another filesystem (a URI of a scheme other than
    /// `file:`; a one-letter scheme is a Windows drive), which these rules do not expand:
    /// the one rule by which both Spark data sources tell remote paths from local ones.
    pub fn is_remote(path: &str) -> bool {
        matches!(local_path(path), Ok(None))
    }

    /// Whether a name found in a directory is read.
    fn keeps(&self, name: &[u8]) -> bool {
        !(name.starts_with(b".") || (self.spark && name.starts_with(b"_")))
    }
}

/// Why paths could not be expanded.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// A path that does not exist (and is no glob).
    #[error("{0}: no such file or directory")]
    NotFound(String),
    /// A glob that matches no file.
    #[error("no file matches the pattern {0}")]
    NoMatch(String),
    /// A glob that cannot be read (`a**`, an unclosed `[`), or a `file:` URI of
    /// another host.
    #[error("{given}: {reason}")]
    Invalid { given: String, reason: String },
    /// A directory could not be listed.
    #[error(transparent)]
    Io(Error),
}

impl From<PathError> for Error {
    fn from(e: PathError) -> Error {
        match e {
            PathError::NotFound(given) => Error::io(
                given,
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such file or directory"),
            ),
            PathError::Io(e) => e,
            other => Error::Config(other.to_string()),
        }
    }
}

/// The local path of a `file:` URI, `path` itself when it is no URI, `None` for a URI of
/// another scheme (`s3://`, `http://`; a one-letter scheme is a Windows drive).
pub fn local_path(path: &str) -> Result<Option<&str>, PathError> {
    let scheme_len = path
        .find(':')
        .filter(|&n| {
            n > 1
                && path[..n].starts_with(|c: char| c.is_ascii_alphabetic())
                && path[..n]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
        })
        .unwrap_or(0);
    if scheme_len == 0 {
        return Ok(Some(path));
    }
    if !path[..scheme_len].eq_ignore_ascii_case("file") {
        return Ok(None);
    }
    let rest = &path[scheme_len + 1..];
    let Some(authority) = rest.strip_prefix("//") else {
        return Ok(Some(rest));
    };
    if authority.starts_with('/') {
        return Ok(Some(authority));
    }
    let (host, tail) = authority.split_at(authority.find('/').unwrap_or(authority.len()));
    if host.is_empty() || host == "localhost" {
        return Ok(Some(if tail.is_empty() { "/" } else { tail }));
    }
    Err(PathError::Invalid {
        given: path.to_string(),
        reason: format!("a file: URI with a host ({host}) is not a local path"),
    })
}

fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '['])
}

/// The files `paths` name, by `rules` (see the [module documentation](self)). Each is a
/// local path or a `file:` URI; a URI of another scheme is [`PathError::NotFound`] (the
/// front ends handle theirs before).
pub fn expand_paths(paths: &[String], rules: PathRules) -> Result<Vec<PathBuf>, PathError> {
    let mut out = Vec::new();
    for given in paths {
        expand_one(given, rules, &mut out)?;
    }
    Ok(out)
}

/// The files of one path, appended to `out`.
pub fn expand_one(given: &str, rules: PathRules, out: &mut Vec<PathBuf>) -> Result<(), PathError> {
    let not_found = || PathError::NotFound(given.to_string());
    let local = local_path(given)?.ok_or_else(not_found)?;
    let path = Path::new(local);
    if path.is_dir() {
        return dir_files(path, rules, out);
    }
    // `symlink_metadata`: a dangling link is there (its read then says what is wrong).
    if path.symlink_metadata().is_ok() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    if !is_glob(local) {
        return Err(not_found());
    }
    let mut found = Vec::new();
    for p in glob_patterns(local) {
        // The walk matches hidden names too (the glob crate's walk drops every hidden
        // name when asked not to, even for a pattern component that starts with `.`);
        // the match of the whole path then applies the rule.
        let matches = glob::glob_with(p, WALK).map_err(|e| invalid(given, e))?;
        let pattern = pattern(given, p)?;
        for m in matches {
            let m = m.map_err(|e| {
                let dir = e.path().to_path_buf();
                PathError::Io(Error::io_path(&dir, e.into()))
            })?;
            if pattern.matches_path_with(&m, STRICT) && !through_dot_entries(p, &m) {
                found.push(m);
            }
        }
    }
    if found.is_empty() {
        return Err(PathError::NoMatch(given.to_string()));
    }
    found.sort();
    found.dedup();
    let mut files = Vec::new();
    for m in found {
        if m.is_dir() {
            dir_files(&m, rules, &mut files)?;
        } else {
            files.push(m);
        }
    }
    // A file both matched and found in a matched directory is read once.
    files.sort();
    files.dedup();
    out.extend(files);
    Ok(())
}

/// How a glob's components are matched while walking a tree: `*`, `?` and `[…]` within
/// one name, case-sensitive; names starting with `.` too (then left to [`STRICT`]).
const WALK: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// How a glob is matched against a whole path (a local one, or a listing's relative
/// one): as [`WALK`], and a name starting with `.` only by a pattern component that
/// starts with `.` (`*` and `**` pass no hidden name).
const STRICT: glob::MatchOptions = glob::MatchOptions {
    require_literal_leading_dot: true,
    ..WALK
};

fn invalid(given: &str, e: glob::PatternError) -> PathError {
    PathError::Invalid {
        given: given.to_string(),
        reason: format!("not a valid pattern: {e}"),
    }
}

fn pattern(given: &str, p: &str) -> Result<glob::Pattern, PathError> {
    glob::Pattern::new(p).map_err(|e| invalid(given, e))
}

/// Whether a glob's match passes through `.` or `..` where the pattern has no such
/// name: the glob crate's walk offers both to every component starting with `.`, so
/// `dumps/.*` would otherwise read `dumps/..`, the directory above. A listing has
/// neither entry.
fn through_dot_entries(pattern: &str, found: &Path) -> bool {
    let written: Vec<&str> = pattern.split(std::path::is_separator).collect();
    found
        .to_string_lossy()
        .split(std::path::is_separator)
        .enumerate()
        .any(|(i, name)| matches!(name, "." | "..") && written.get(i) != Some(&name))
}

/// The patterns a glob is matched as: itself and, when it ends in a `**` component, the
/// directory that `**` starts from (`.` for the current one), which the glob crate's
/// walk leaves out (it has only the directories under it).
fn glob_patterns(pattern: &str) -> Vec<&str> {
    let mut patterns = vec![pattern];
    if let Some(parent) = pattern.strip_suffix("/**") {
        patterns.push(if parent.is_empty() { "/" } else { parent });
    } else if pattern == "**" {
        patterns.push(".");
    }
    patterns
}

/// Whether a glob ends in a `**` component, which matches directories only (whose files
/// are then read): the glob crate's walk yields no file for it.
fn ends_in_globstar(pattern: &str) -> bool {
    pattern == "**" || pattern.ends_with("/**")
}

/// One entry of a listing: its path relative to the listed directory (`/` between
/// names) and whether it is a file (else a directory).
pub type Entry<S> = (S, bool);

/// The entries of a listing that a glob matches (files and directories, in the
/// listing's order), by the rules and the matcher of local globs (see the [module
/// documentation](self)): `pattern` is relative to the listed directory, `entries` that
/// directory's tree (`a/b` is read as inside a directory `a` whether or not `a` is
/// listed). The directory itself, which a pattern's last `**` also matches, is never
/// among them: [`select_listing`] reads it. This is what a caller listing a remote
/// tree one level at a time needs to know which directories to list next.
pub fn match_listing<S: AsRef<str>>(
    pattern: &str,
    entries: &[Entry<S>],
) -> Result<Vec<usize>, PathError> {
    let glob = self::pattern(pattern, pattern)?;
    let dirs_only = ends_in_globstar(pattern);
    Ok(entries
        .iter()
        .enumerate()
        .filter(|(_, (path, is_file))| {
            !(dirs_only && *is_file) && glob.matches_with(relative(path.as_ref()), STRICT)
        })
        .map(|(i, _)| i)
        .collect())
}

/// The files a listing gives by `rules` (see the [module documentation](self)), as
/// indices into `entries`, sorted by path: with `pattern` None, the listed directory's
/// files (subdirectories only when [`PathRules::recursive`]; names starting with `.`,
/// and `_` by Spark's rules, left out); with a glob (relative to the listed directory),
/// its matches, a directory among them giving its files by the same rules. `entries`
/// is the listed directory's tree as [`match_listing`] takes it, deep enough for what
/// is asked (a recursive listing always is). A glob that matches nothing is
/// [`PathError::NoMatch`]. Local paths and remote listings (Spark's `s3://`…, listed
/// through `pyarrow.fs`) are selected by these same rules and the same matcher: a test
/// below checks that [`expand_paths`] over a directory and this over its listing agree.
pub fn select_listing<S: AsRef<str>>(
    pattern: Option<&str>,
    entries: &[Entry<S>],
    rules: PathRules,
) -> Result<Vec<usize>, PathError> {
    use std::collections::HashSet;
    // The directories whose files are read ("" = the listed one), and the files matched.
    let mut dirs: HashSet<&str> = HashSet::new();
    let mut picked: Vec<usize> = Vec::new();
    match pattern {
        None => {
            dirs.insert("");
        }
        Some(given) => {
            for p in glob_patterns(given) {
                if p == "." {
                    dirs.insert("");
                    continue;
                }
                // Directories are those listed and those an entry's path implies
                // (an object store may list no directory at all).
                let glob = self::pattern(given, p)?;
                let dirs_only = ends_in_globstar(p);
                for (i, (path, is_file)) in entries.iter().enumerate() {
                    let path = relative(path.as_ref());
                    if !*is_file && glob.matches_with(path, STRICT) {
                        dirs.insert(path);
                    }
                    for (n, _) in path.match_indices('/') {
                        if glob.matches_with(&path[..n], STRICT) {
                            dirs.insert(&path[..n]);
                        }
                    }
                    if *is_file && !dirs_only && glob.matches_with(path, STRICT) {
                        picked.push(i);
                    }
                }
            }
            if dirs.is_empty() && picked.is_empty() {
                return Err(PathError::NoMatch(given.to_string()));
            }
        }
    }
    // A file is read from a chosen directory when every name below that directory is
    // kept, and it is a direct child unless the rules are recursive.
    for (i, (path, is_file)) in entries.iter().enumerate() {
        if !*is_file {
            continue;
        }
        let path = relative(path.as_ref());
        let mut end = path.len();
        loop {
            let (parent, name) = match path[..end].rfind('/') {
                Some(n) => (&path[..n], &path[n + 1..end]),
                None => ("", &path[..end]),
            };
            if !rules.keeps(name.as_bytes()) {
                break;
            }
            if dirs.contains(parent) {
                picked.push(i);
                break;
            }
            if !rules.recursive || parent.is_empty() {
                break;
            }
            end = parent.len();
        }
    }
    // Sorted and without repeats as local expansion's paths (by name, component by
    // component: `a/x` before `a-b/x`).
    let path_of = |i: usize| Path::new(relative(entries[i].0.as_ref()));
    picked.sort_by(|&a, &b| path_of(a).cmp(path_of(b)));
    picked.dedup_by(|a, b| path_of(*a) == path_of(*b));
    Ok(picked)
}

/// A listing's path without `/` at either end (an object store's directory markers end
/// in one).
fn relative(path: &str) -> &str {
    path.trim_matches('/')
}

/// A directory's files by `rules`, sorted, appended to `out`.
fn dir_files(dir: &Path, rules: PathRules, out: &mut Vec<PathBuf>) -> Result<(), PathError> {
    let mut files = Vec::new();
    walk(dir, rules, &mut files).map_err(PathError::Io)?;
    files.sort();
    out.extend(files);
    Ok(())
}

fn walk(dir: &Path, rules: PathRules, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io_path(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io_path(dir, e))?;
        if !rules.keeps(entry.file_name().as_encoded_bytes()) {
            continue;
        }
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| Error::io_path(&path, e))?;
        if kind.is_dir() {
            if rules.recursive {
                walk(&path, rules, out)?;
            }
        } else if kind.is_file() || (kind.is_symlink() && path.is_file()) {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tree with hidden names, Spark's `_` names and subdirectories.
    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for d in ["sub/deeper", ".hidden", "_temporary"] {
            std::fs::create_dir_all(dir.path().join(d)).expect("a directory");
        }
        for f in [
            "a.soif",
            "b.soif",
            "_skip.soif",
            "_SUCCESS",
            ".dot.soif",
            "sub/c.soif",
            "sub/deeper/d.soif",
            ".hidden/e.soif",
            "_temporary/f.soif",
        ] {
            std::fs::write(dir.path().join(f), b"").expect("a file");
        }
        dir
    }

    /// The files `given` (relative to `root`) names, relative to `root`.
    fn names(root: &Path, given: &str, rules: PathRules) -> Vec<String> {
        let path = root.join(given).to_string_lossy().into_owned();
        expand_paths(&[path], rules)
            .expect("expanded")
            .into_iter()
            .map(|p| {
                p.strip_prefix(root)
                    .expect("under the root")
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }

    #[test]
    fn a_directory_by_each_front_end_s_rules() {
        let t = tree();
        let root = t.path();
        assert_eq!(
            names(root, "", PathRules::CLI),
            [
                "_SUCCESS",
                "_skip.soif",
                "_temporary/f.soif",
                "a.soif",
                "b.soif",
                "sub/c.soif",
                "sub/deeper/d.soif"
            ]
        );
        assert_eq!(
            names(root, "", PathRules::spark(false)),
            ["a.soif", "b.soif"]
        );
        assert_eq!(
            names(root, "", PathRules::spark(true)),
            ["a.soif", "b.soif", "sub/c.soif", "sub/deeper/d.soif"]
        );
    }

    #[test]
    fn globs_match_names_and_directories() {
        let t = tree();
        let root = t.path();
        let spark = PathRules::spark(false);
        // `*` matches `_` names (only directories' listings skip them) but not hidden ones.
        assert_eq!(
            names(root, "*.soif", spark),
            ["_skip.soif", "a.soif", "b.soif"]
        );
        assert_eq!(names(root, ".*.soif", spark), [".dot.soif"]);
        assert_eq!(
            names(root, "**/*.soif", spark),
            [
                "_skip.soif",
                "_temporary/f.soif",
                "a.soif",
                "b.soif",
                "sub/c.soif",
                "sub/deeper/d.soif"
            ]
        );
        // `dir/**`: the directories, whose files are read by the rules.
        assert_eq!(
            names(root, "sub/**", spark),
            ["sub/c.soif", "sub/deeper/d.soif"]
        );
        assert_eq!(
            names(root, "**", PathRules::spark(false)),
            [
                "_temporary/f.soif",
                "a.soif",
                "b.soif",
                "sub/c.soif",
                "sub/deeper/d.soif"
            ]
        );
        assert_eq!(names(root, "s?b/[cd].soif", spark), ["sub/c.soif"]);
        assert_eq!(names(root, "sub/[!c]*", spark), ["sub/deeper/d.soif"]);
    }

    #[test]
    fn what_is_not_there_is_an_error_naming_it() {
        let t = tree();
        let missing = t.path().join("missing.soif").to_string_lossy().into_owned();
        let e = expand_paths(std::slice::from_ref(&missing), PathRules::CLI).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{missing}: no such file or directory")
        );
        let pattern = t
            .path()
            .join("nothing-*.soif")
            .to_string_lossy()
            .into_owned();
        let e = expand_paths(std::slice::from_ref(&pattern), PathRules::CLI).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("no file matches the pattern {pattern}")
        );
        assert!(matches!(Error::from(e), Error::Config(_)));
        let bad = t.path().join("a**.soif").to_string_lossy().into_owned();
        let e = expand_paths(std::slice::from_ref(&bad), PathRules::CLI).unwrap_err();
        assert!(e.to_string().contains("not a valid pattern"), "{e}");
    }

    #[test]
    fn an_existing_name_with_glob_characters_is_read_as_it_is() {
        let t = tree();
        std::fs::write(t.path().join("odd[1].soif"), b"").expect("a file");
        assert_eq!(
            names(t.path(), "odd[1].soif", PathRules::CLI),
            ["odd[1].soif"]
        );
    }

    /// Every entry under `dir` (hidden names too), relative, with `/` between names, and
    /// whether it is a file: what a remote filesystem's recursive listing gives.
    fn listing(root: &Path, dir: &Path, out: &mut Vec<(String, bool)>) {
        for entry in std::fs::read_dir(dir).expect("a listing") {
            let path = entry.expect("an entry").path();
            let rel = path.strip_prefix(root).expect("under the root");
            let rel = rel
                .to_string_lossy()
                .replace(std::path::MAIN_SEPARATOR, "/");
            out.push((rel, path.is_file()));
            if path.is_dir() {
                listing(root, &path, out);
            }
        }
    }

    /// What `select_listing` selects, as paths, or the kind of its error.
    fn selected(
        pattern: Option<&str>,
        entries: &[(String, bool)],
        rules: PathRules,
    ) -> Result<Vec<String>, &'static str> {
        match select_listing(pattern, entries, rules) {
            Ok(picked) => Ok(picked.into_iter().map(|i| entries[i].0.clone()).collect()),
            Err(e) => Err(kind(&e)),
        }
    }

    fn kind(e: &PathError) -> &'static str {
        match e {
            PathError::NotFound(_) => "not found",
            PathError::NoMatch(_) => "no match",
            PathError::Invalid { .. } => "invalid",
            PathError::Io(_) => "io",
        }
    }

    #[test]
    fn a_listing_selects_what_local_expansion_does() {
        let t = tree();
        let root = t.path();
        for d in ["a-b", "sub/deeper/.hid", "sub/_x"] {
            std::fs::create_dir_all(root.join(d)).expect("a directory");
        }
        for f in [
            "a-b/x.soif",
            "sub/_u.soif",
            "sub/.v.soif",
            "sub/_x/w.soif",
            "sub/deeper/.hid/z.soif",
            "_temporary/.g.soif",
            "ab.soif",
        ] {
            std::fs::write(root.join(f), b"").expect("a file");
        }
        let mut full = Vec::new();
        listing(root, root, &mut full);
        // An object store's listing may hold no directory: they are implied by the files.
        let files_only: Vec<(String, bool)> = full.iter().filter(|e| e.1).cloned().collect();
        let patterns = [
            None,
            Some("*"),
            Some("*.soif"),
            Some("?.soif"),
            Some("??.soif"),
            Some("[ab].soif"),
            Some("[a-b]*"),
            Some("[!a]*.soif"),
            Some("_*"),
            Some(".*"),
            Some(".*/*"),
            Some(".hidden/*.soif"),
            Some("_temporary"),
            Some("_temporary/*"),
            Some("sub"),
            Some("sub/*"),
            Some("s?b/*.soif"),
            Some("*/*.soif"),
            Some("*/*"),
            Some("**"),
            Some("**/*.soif"),
            Some("**/*"),
            Some("**/d.soif"),
            Some("**/.hid/*"),
            Some("sub/**"),
            Some("sub/**/*.soif"),
            Some("*/**"),
            Some("**/**"),
            Some("sub/deeper/**"),
            Some("a.soif"),
            Some("nothing-*"),
            Some("a**.soif"),
            Some("[ab.soif"),
        ];
        let mut compared = 0;
        for rules in [
            PathRules::CLI,
            PathRules::spark(false),
            PathRules::spark(true),
        ] {
            for pattern in patterns {
                let path = root
                    .join(pattern.unwrap_or(""))
                    .to_string_lossy()
                    .into_owned();
                let local = match expand_paths(&[path], rules) {
                    Ok(files) => Ok(files
                        .into_iter()
                        .map(|p| {
                            let rel = p.strip_prefix(root).expect("under the root");
                            rel.to_string_lossy()
                                .replace(std::path::MAIN_SEPARATOR, "/")
                        })
                        .collect::<Vec<_>>()),
                    Err(e) => Err(kind(&e)),
                };
                for entries in [&full, &files_only] {
                    let remote = selected(pattern, entries, rules);
                    assert_eq!(remote, local, "{pattern:?} by {rules:?}");
                }
                compared += 1;
            }
        }
        assert_eq!(compared, 3 * patterns.len());
        // The table meets each case: hidden and `_` names, recursion, `**`, no match.
        let spark = PathRules::spark(false);
        assert_eq!(
            selected(Some("sub/**"), &full, spark).unwrap(),
            ["sub/_x/w.soif", "sub/c.soif", "sub/deeper/d.soif"]
        );
        // `.*` is no way up: the glob crate's walk also offers `..` to it.
        assert_eq!(
            names(root, ".*", PathRules::CLI),
            [".dot.soif", ".hidden/e.soif"]
        );
        assert_eq!(
            selected(None, &files_only, PathRules::spark(true)).unwrap(),
            [
                "a-b/x.soif",
                "a.soif",
                "ab.soif",
                "b.soif",
                "sub/c.soif",
                "sub/deeper/d.soif"
            ]
        );
        assert_eq!(
            selected(Some("**/.hid/*"), &files_only, spark).unwrap(),
            ["sub/deeper/.hid/z.soif"]
        );
        assert_eq!(selected(Some("nothing-*"), &full, spark), Err("no match"));
        assert_eq!(selected(Some("[ab.soif"), &full, spark), Err("invalid"));
    }

    #[test]
    fn a_listing_s_matches_are_its_files_and_directories() {
        let entries = [
            ("a.soif", true),
            ("sub", false),
            ("sub/c.soif", true),
            (".hidden", false),
            ("_temporary/", false),
        ];
        assert_eq!(match_listing("*", &entries).unwrap(), [0, 1, 4]);
        assert_eq!(match_listing("**", &entries).unwrap(), [1, 4]);
        assert_eq!(match_listing(".*", &entries).unwrap(), [3]);
        assert_eq!(match_listing("*/*.soif", &entries).unwrap(), [2]);
        assert!(matches!(
            match_listing("a**", &entries),
            Err(PathError::Invalid { .. })
        ));
    }

    #[test]
    fn file_uris_are_local_paths() {
        assert_eq!(local_path("file:///data/a").unwrap(), Some("/data/a"));
        assert_eq!(local_path("file:/data/a").unwrap(), Some("/data/a"));
        assert_eq!(local_path("FILE://localhost/data").unwrap(), Some("/data"));
        assert_eq!(local_path("file://").unwrap(), Some("/"));
        assert_eq!(local_path("data/a.soif").unwrap(), Some("data/a.soif"));
        assert_eq!(local_path("C:\\data").unwrap(), Some("C:\\data"));
        assert_eq!(local_path("s3://bucket/a").unwrap(), None);
        for remote in [
            "s3://bucket/a",
            "s3a://b/x/*.soif",
            "hdfs://nn:8020/d",
            "gs://b/",
        ] {
            assert!(PathRules::is_remote(remote), "{remote}");
        }
        for local in [
            "a.soif",
            "/data/*.soif",
            "file:///data/a",
            "C:\\data",
            "file://host/x",
        ] {
            assert!(!PathRules::is_remote(local), "{local}");
        }
        let e = local_path("file://host/data").unwrap_err();
        assert!(
            e.to_string().contains("a file: URI with a host (host)"),
            "{e}"
        );
        let t = tree();
        let uri = format!("file://{}", t.path().join("a.soif").display());
        assert_eq!(
            expand_paths(&[uri], PathRules::CLI).unwrap(),
            [t.path().join("a.soif")]
        );
    }
}
