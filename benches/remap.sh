#!/usr/bin/env bash
# The `remap` transform against the same mapping in Catmandu's Fix language and in jq,
# and what the transform stage costs, on generated summary records (soif-gen
# --summaries-only), side by side in one run.
#
#   benches/remap.sh                              # SIZE=200MB, MEM_SIZES="200MB 1GB", RUNS=3
#   WORK=/tmp/remapbench SIZE=20MB MEM_SIZES=20MB RUNS=1 benches/remap.sh   # a quick check
#
# Rows (wall seconds, mean of RUNS; records per second; peak RSS, the largest run):
#   soif convert x.soif --to jsonl                         no transform
#   ... -t collapse                                        at most 1.3× no transform
#   ... -t dc
#   ... -t remap:EMPTY.vrl (the program `.`)               at most 2× no transform
#   ... -t collapse -t remap:configs/crosswalk.vrl --table types=configs/harvest-types.csv
#   the empty program and the crosswalk again with SOIF_TRANSFORM_THREADS=1 (the chain on
#   one thread, as before it ran on every core: docs/performance.md#the-transform-stage)
#   catmandu convert JSON to JSON --fix configs/crosswalk.fix   over soif's collapsed JSON Lines
#   jq -n -c --rawfile types … -f configs/crosswalk.jq            over the same JSON Lines
# (Catmandu and jq run RUNS_OTHERS times, default 1: they take minutes.) The crosswalk's
# three forms are first run on 2 MB of the same records and their outputs compared, keys
# sorted: the script stops if they differ. Then the crosswalk's peak RSS for each of
# MEM_SIZES. Installs Catmandu and jq with apt-get when missing. Uses target/release (or
# $CARGO_TARGET_DIR/release); builds it unless SKIP_BUILD=1 (PROFILE=debug with
# SKIP_BUILD=1 checks the script itself on a debug build: its figures mean nothing).
# Figures: docs/performance.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PROFILE=${PROFILE:-release}
SOIF=$TARGET/$PROFILE/soif
GEN=$TARGET/$PROFILE/soif-gen
SIZE=${SIZE:-200MB}
MEM_SIZES=${MEM_SIZES:-"200MB 1GB"}
RUNS=${RUNS:-3}
RUNS_OTHERS=${RUNS_OTHERS:-1}
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/soif-remapbench.XXXXXX")}
mkdir -p "$WORK"
cd "$ROOT"
[ "${SKIP_BUILD:-0}" = 1 ] || cargo build --release --locked --quiet -p soif --bin soif --bin soif-gen
if ! command -v catmandu >/dev/null || ! command -v jq >/dev/null; then
    apt-get install -y --no-install-recommends libcatmandu-perl jq >/dev/null
fi

MAP=(-t remap:configs/crosswalk.vrl --table types=configs/harvest-types.csv)
CATMANDU=(catmandu convert JSON --line_delimited 1 to JSON --line_delimited 1 --fix configs/crosswalk.fix)
JQ=(jq -n -c --rawfile types configs/harvest-types.csv -f configs/crosswalk.jq)
printf '.\n' >"$WORK/empty.vrl"

. "$ROOT/benches/common.sh"

corpus() { # corpus SIZE: the generated file's path
    local data=$WORK/summaries-$1.soif
    [ -s "$data" ] || "$GEN" --size "$1" --summaries-only -o "$data"
    echo "$data"
}

DATA=$(corpus "$SIZE")
COLLAPSED=$DATA.collapsed.jsonl
[ -s "$COLLAPSED" ] || "$SOIF" convert "$DATA" --to jsonl -t collapse -q -o "$COLLAPSED"
RECORDS=$(wc -l <"$COLLAPSED")

# The three forms of the crosswalk agree (keys sorted; Catmandu orders keys its own way),
# on a small corpus: the first records of the same generated stream.
SAMPLE=$(corpus 2MB)
"$SOIF" convert "$SAMPLE" --to jsonl -t collapse -q -o "$WORK/sample.jsonl"
"$SOIF" convert "$SAMPLE" --to jsonl -t collapse "${MAP[@]}" -q | jq -S -c . >"$WORK/sample.soif.out"
"${CATMANDU[@]}" <"$WORK/sample.jsonl" | jq -S -c . >"$WORK/sample.catmandu.out"
"${JQ[@]}" "$WORK/sample.jsonl" | jq -S -c . >"$WORK/sample.jq.out"
cmp "$WORK/sample.soif.out" "$WORK/sample.catmandu.out"
cmp "$WORK/sample.soif.out" "$WORK/sample.jq.out"

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg); runs: $RUNS (Catmandu, jq: $RUNS_OTHERS); $(catmandu --version 2>/dev/null | head -1 || true); $(jq --version)"
echo "input: $SIZE of summary records ($RECORDS records; $(stat -c %s "$DATA") bytes of SOIF, $(stat -c %s "$COLLAPSED") as collapsed JSON Lines)"
printf '| %-62s | %8s | %10s | %8s | %12s |\n' command "mean s" "records/s" "× none" "peak RSS MiB"
printf '|%s|%s|%s|%s|%s|\n' ---------------------------------------------------------------- ---------- ------------ ---------- --------------
row() { # row LABEL SECONDS RSS
    printf '| %-62s | %8s | %10.0f | %8.2f | %12s |\n' "$1" "$2" "$(echo "$RECORDS / $2" | bc -l)" "$(echo "$2 / $NONE" | bc -l)" "$3"
}
read -r NONE m < <(measure "$RUNS" "$SOIF" convert "$DATA" --to jsonl -q -o /dev/null)
row "soif convert --to jsonl (no transform)" "$NONE" "$m"
read -r s m < <(measure "$RUNS" "$SOIF" convert "$DATA" --to jsonl -t collapse -q -o /dev/null)
row "soif ... -t collapse" "$s" "$m"
read -r s m < <(measure "$RUNS" "$SOIF" convert "$DATA" --to jsonl -t dc -q -o /dev/null)
row "soif ... -t dc" "$s" "$m"
read -r s m < <(measure "$RUNS" "$SOIF" convert "$DATA" --to jsonl -t "remap:$WORK/empty.vrl" -q -o /dev/null)
row "soif ... -t remap:EMPTY.vrl (the program \`.\`)" "$s" "$m"
read -r SOIF_S m < <(measure "$RUNS" "$SOIF" convert "$DATA" --to jsonl -t collapse "${MAP[@]}" -q -o /dev/null)
row "soif ... -t collapse -t remap:configs/crosswalk.vrl" "$SOIF_S" "$m"
read -r s m < <(measure "$RUNS" env SOIF_TRANSFORM_THREADS=1 "$SOIF" convert "$DATA" --to jsonl -t "remap:$WORK/empty.vrl" -q -o /dev/null)
row "the empty program, SOIF_TRANSFORM_THREADS=1" "$s" "$m"
read -r s m < <(measure "$RUNS" env SOIF_TRANSFORM_THREADS=1 "$SOIF" convert "$DATA" --to jsonl -t collapse "${MAP[@]}" -q -o /dev/null)
row "the crosswalk, SOIF_TRANSFORM_THREADS=1" "$s" "$m"
read -r CAT_S m < <(IN=$COLLAPSED measure "$RUNS_OTHERS" "${CATMANDU[@]}")
row "catmandu ... --fix configs/crosswalk.fix (collapsed JSON Lines)" "$CAT_S" "$m"
read -r JQ_S m < <(measure "$RUNS_OTHERS" "${JQ[@]}" "$COLLAPSED")
row "jq ... -f configs/crosswalk.jq (collapsed JSON Lines)" "$JQ_S" "$m"
echo "crosswalk speed-up: $(printf '%.1f' "$(echo "$CAT_S / $SOIF_S" | bc -l)")× Catmandu, $(printf '%.1f' "$(echo "$JQ_S / $SOIF_S" | bc -l)")× jq"

echo "peak memory of soif ... -t collapse -t remap:configs/crosswalk.vrl:"
for size in $MEM_SIZES; do
    data=$(corpus "$size")
    read -r s m < <(measure 1 "$SOIF" convert "$data" --to jsonl -t collapse "${MAP[@]}" -q -o /dev/null)
    echo "  $size ($(stat -c %s "$data") bytes): $s s, $m MiB"
done
