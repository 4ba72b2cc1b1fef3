#!/usr/bin/env bash
# What an incremental run (--state) costs when nothing changed, over a directory of
# many gzip'd dumps, next to the first run (everything new), a run after one new dump,
# and converting the same directory without --state.
#
#   benches/state.sh                         # FILES=10000 RUNS=5
#   WORK=/tmp/statebench FILES=2000 RUNS=3 benches/state.sh
#
# The dumps: FILES gzip'd SOIF files of 3 summary records each (about 1.1 KB
# compressed), dated an hour ago (older than --settle). Each run writes a SQLite catalog
# and a Parquet file per run, as configs/nightly-dumps.toml does. Printed: wall seconds
# (mean of RUNS for the repeated cases) and peak RSS (/usr/bin/time %M).
# Uses target/release (or $CARGO_TARGET_DIR/release); builds it unless SKIP_BUILD=1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
SOIF=$TARGET/release/soif
FILES=${FILES:-10000}
RUNS=${RUNS:-5}
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/soif-statebench.XXXXXX")}
mkdir -p "$WORK"
[ "${SKIP_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release --quiet --bin soif)

rm -rf "$WORK/dumps" "$WORK/run" && mkdir -p "$WORK/dumps" "$WORK/run"
python3 - "$WORK/dumps" "$FILES" <<'PY'
import gzip, os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
old = time.time() - 3600
for i in range(n):
    sub = os.path.join(d, f"{i // 1000:03d}")
    os.makedirs(sub, exist_ok=True)
    recs = []
    for j in range(3):
        url = f"http://host{i % 97}.example/dump{i}/doc{j}.html"
        title = f"Document {j} of dump {i}"
        body = f"Title{{{len(title)}}}:\t{title}\nKeywords{{17}}:\tharvest gatherer\n"
        recs.append(f"@FILE {{ {url}\n{body}}}\n")
    p = os.path.join(sub, f"dump{i:05d}.soif.gz")
    with gzip.open(p, "wt") as f:
        f.write("".join(recs))
    os.utime(p, (old, old))
PY
cat > "$WORK/run/pipeline.toml" <<TOML
[source]
inputs = ["$WORK/dumps"]
[[sink]]
format = "sqlite"
output = "catalog.db"
[[sink]]
format = "parquet"
output = "records.parquet"
[state]
path = "state.db"
TOML
cat > "$WORK/run/plain.toml" <<TOML
[source]
inputs = ["$WORK/dumps"]
[[sink]]
format = "sqlite"
output = "plain.db"
[[sink]]
format = "parquet"
output = "plain.parquet"
TOML

# once CMD...: prints "seconds peak_rss_mib" of one run.
once() {
    (cd "$WORK/run" && /usr/bin/time -o "$WORK/time.txt" -f '%e %M' "$@" >/dev/null 2>&1)
    local out s m
    out=$(tail -1 "$WORK/time.txt"); s=${out% *}; m=${out#* }
    printf '%.3f %.1f\n' "$s" "$(echo "$m / 1024" | bc -l)"
}
# mean CMD...: prints "mean_seconds peak_rss_mib" over RUNS runs.
mean() {
    local total=0 peak=0 i r s m
    for i in $(seq "$RUNS"); do
        r=$(once "$@"); s=${r% *}; m=${r#* }
        total=$(echo "$total + $s" | bc -l)
        [ "$(echo "$m > $peak" | bc -l)" = 1 ] && peak=$m
    done
    printf '%.3f %.1f\n' "$(echo "$total / $RUNS" | bc -l)" "$peak"
}

echo "files: $FILES ($(du -sh "$WORK/dumps" | cut -f1) on disk), runs: $RUNS"
printf '%-44s %10s %10s\n' case seconds peak_MiB
r=$(once "$SOIF" run pipeline.toml -q);                  printf '%-44s %10s %10s\n' "first run (all new)" $r
r=$(mean "$SOIF" run pipeline.toml -q);                  printf '%-44s %10s %10s\n' "nothing changed" $r
r=$(mean "$SOIF" run pipeline.toml -q --dry-run);        printf '%-44s %10s %10s\n' "nothing changed, --dry-run" $r
cp "$WORK/dumps/000/dump00000.soif.gz" "$WORK/dumps/000/new.soif.gz"
touch -d '1 hour ago' "$WORK/dumps/000/new.soif.gz"
r=$(once "$SOIF" run pipeline.toml -q);                  printf '%-44s %10s %10s\n' "one new dump" $r
rm -f "$WORK/run/plain.db"* "$WORK/run/plain.parquet"
r=$(once "$SOIF" run plain.toml -q);                     printf '%-44s %10s %10s\n' "without --state (all, into a new catalog)" $r
"$SOIF" state "$WORK/run/state.db" --limit 3 | head -6
