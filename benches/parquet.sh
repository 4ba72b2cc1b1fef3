#!/usr/bin/env bash
# soif's Parquet output against DuckDB converting the same records from JSON Lines, on
# generated Harvest-like data (soif-gen, as benches/compare.sh), side by side in one run.
#
#   benches/parquet.sh                       # SIZES="200MB 1GB", RUNS=3
#   WORK=/tmp/pqbench SIZES=200MB RUNS=1 benches/parquet.sh
#
# For each size: wall seconds (mean of RUNS) and peak RSS (/usr/bin/time %M, the largest
# of the runs) of
#   soif convert x.soif --to parquet -o x.parquet          (zstd, the default)
#   DuckDB: COPY (FROM read_json('x.jsonl')) TO 'x.parquet' (COMPRESSION zstd)
#           (the Python duckdb package from the project .venv, on all cores)
# and the sizes of the SOIF, its `gzip -6`, and both Parquet files.
# Uses target/release (or $CARGO_TARGET_DIR/release); builds it unless SKIP_BUILD=1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
SOIF=$TARGET/release/soif
GEN=$TARGET/release/soif-gen
PY=${PY:-$ROOT/.venv/bin/python}
SIZES=${SIZES:-"200MB 1GB"}
RUNS=${RUNS:-3}
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/soif-pqbench.XXXXXX")}
mkdir -p "$WORK"
[ "${SKIP_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release --quiet --bin soif --bin soif-gen)
"$PY" -c 'import duckdb' 2>/dev/null || "$PY" -m pip install --quiet duckdb

. "$ROOT/benches/common.sh"


echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); cores: $(nproc); runs: $RUNS; duckdb $("$PY" -c 'import duckdb; print(duckdb.__version__)')"
printf '| %-6s | %-44s | %8s | %8s | %12s |\n' size command "mean s" "MB/s" "peak RSS MiB"
printf '|%s|%s|%s|%s|%s|\n' -------- ---------------------------------------------- ---------- ---------- --------------
for SIZE in $SIZES; do
    DATA=$WORK/bench-$SIZE.soif
    [ -s "$DATA" ] || "$GEN" --size "$SIZE" -o "$DATA"
    [ -s "$DATA.jsonl" ] || "$SOIF" convert "$DATA" --to jsonl -q -o "$DATA.jsonl"
    [ -s "$DATA.gz" ] || gzip -6 -c "$DATA" >"$DATA.gz"
    MBS=$(mb "$DATA")
    read -r s m < <(measure "$RUNS" "$SOIF" convert "$DATA" --to parquet -q -o "$WORK/soif.parquet")
    printf '| %-6s | %-44s | %8s | %8.0f | %12s |\n' "$SIZE" "soif convert --to parquet" "$s" "$(echo "$MBS / $s" | bc -l)" "$m"
    read -r s2 m2 < <(measure "$RUNS" "$PY" -c "import duckdb; duckdb.sql(\"COPY (FROM read_json('$DATA.jsonl')) TO '$WORK/duck.parquet' (COMPRESSION zstd)\")")
    printf '| %-6s | %-44s | %8s | %8.0f | %12s |\n' "$SIZE" "DuckDB COPY read_json(jsonl) TO parquet zstd" "$s2" "$(echo "$MBS / $s2" | bc -l)" "$m2"
    echo "| $SIZE | speed-up: $(printf '%.1f' "$(echo "$s2 / $s" | bc -l)")× | SOIF $MBS MB, JSON Lines $(mb "$DATA.jsonl") MB, gzip -6 $(mb "$DATA.gz") MB, soif parquet $(mb "$WORK/soif.parquet") MB, DuckDB parquet $(mb "$WORK/duck.parquet") MB | | |"
done
