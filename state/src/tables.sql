-- soif state store, layout version 1 (docs/state-layout.md).
CREATE TABLE soif_state_meta (
  key   TEXT PRIMARY KEY,          -- layout, layout_version, created
  value TEXT NOT NULL
);
CREATE TABLE runs (
  id          INTEGER PRIMARY KEY, -- run number, also in output names (-rN)
  started     TEXT NOT NULL,       -- RFC 3339 UTC
  finished    TEXT,
  -- running: converting; committing: every sink committed, progress staged, outputs
  -- being published; ok / rejected (records skipped or quarantined): done;
  -- failed: stopped with an error; interrupted: killed, found by the next run
  status      TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  command     TEXT NOT NULL,       -- JSON array: the command line
  inputs      TEXT NOT NULL,       -- JSON array: the inputs as given
  taken       INTEGER,             -- files taken
  unchanged   INTEGER,             -- files skipped as unchanged (and touched)
  settling    INTEGER,             -- files left for the next run
  records_in  INTEGER,
  records_out INTEGER,
  rejected    INTEGER,
  exit_status INTEGER,             -- the status the run exits (or would have) with
  error       TEXT,
  final_status TEXT,               -- while committing: ok or rejected
  report      TEXT                 -- the run's --report JSON
);
CREATE TABLE run_outputs (
  run        INTEGER NOT NULL REFERENCES runs(id),
  temp       TEXT NOT NULL,        -- absolute path written during the run
  final_path TEXT NOT NULL,        -- absolute path it is published as
  -- planned: being written; ready: complete and synced, to publish; empty: nothing
  -- was written, to remove; published; removed
  state      TEXT NOT NULL,
  PRIMARY KEY (run, temp)
);
-- What each run took (its history), staged when the run commits.
CREATE TABLE run_files (
  run         INTEGER NOT NULL REFERENCES runs(id),
  path        TEXT NOT NULL,       -- canonical absolute path
  size        INTEGER NOT NULL,
  mtime_ns    INTEGER NOT NULL,    -- nanoseconds since 1970-01-01 UTC
  hash        TEXT NOT NULL,       -- BLAKE3 of the bytes as stored, hex
  reason      TEXT NOT NULL,       -- new | changed | touched (not read: same content)
  records_in  INTEGER,
  records_out INTEGER,
  rejected    INTEGER,
  PRIMARY KEY (run, path)
);
CREATE TABLE run_sources (
  run         INTEGER NOT NULL REFERENCES runs(id),
  key         TEXT NOT NULL,       -- the source's canonical name (its URL)
  kind        TEXT NOT NULL,       -- http | x-catalog | oai | …
  checkpoint  TEXT NOT NULL,       -- JSON text, the source's own
  records_in  INTEGER,
  records_out INTEGER,
  rejected    INTEGER,
  PRIMARY KEY (run, key)
);
-- The current state: the last committed take of every file…
CREATE TABLE files (
  path        TEXT PRIMARY KEY,
  size        INTEGER NOT NULL,
  mtime_ns    INTEGER NOT NULL,
  hash        TEXT NOT NULL,
  run         INTEGER NOT NULL REFERENCES runs(id),
  taken       TEXT NOT NULL,       -- when that run committed
  records     INTEGER
);
-- …and the last committed checkpoint of every other source.
CREATE TABLE sources (
  key         TEXT PRIMARY KEY,
  kind        TEXT NOT NULL,
  checkpoint  TEXT NOT NULL,
  run         INTEGER NOT NULL REFERENCES runs(id),
  updated     TEXT NOT NULL
);
