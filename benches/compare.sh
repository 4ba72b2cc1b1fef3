#!/usr/bin/env bash
# Compares soif with other tools on the same generated Harvest-like data.
#
#   benches/compare.sh                 # 200 MB of records (SIZE=200MB)
#   SIZE=2GB RUNS=1 benches/compare.sh
#   WORK=/tmp/bench SKIP_BUILD=1 benches/compare.sh   # reuse data and binaries
#
# Times (hyperfine, mean of RUNS runs after one warm-up) and peak RSS (/usr/bin/time):
#   soif convert --to jsonl    SOIF -> JSON Lines
#   soif convert --to null     parse and count only
#   cat                        the floor: reading the file
#   jq -c .                    re-printing the same data as JSON Lines
# plus one record whose value is SIZE bytes (soif --to null), for memory;
# and loading SQLite (records/s, into a fresh database each run):
#   soif convert --to sqlite   SOIF -> a table per template (WAL, 1000 rows per commit)
#   sqlite3 .import --csv      sqlite3's own CSV import of the same records (as CSV)
# MB/s is the SOIF input size (10^6 bytes) over the mean time; jq's figure is over the
# JSON Lines input it reads.
set -euo pipefail

SIZE=${SIZE:-200MB}
HUGE_SIZE=${HUGE:-100MB}
RUNS=${RUNS:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/soif-bench.XXXXXX")}
SOIF=$ROOT/target/release/soif
GEN=$ROOT/target/release/soif-gen

need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    echo "installing $2 ..." >&2
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq >/dev/null && apt-get install -y -qq "$2" >/dev/null
    else
        sudo apt-get update -qq >/dev/null && sudo apt-get install -y -qq "$2" >/dev/null
    fi
}
need hyperfine hyperfine
need jq jq
need sqlite3 sqlite3
[ -x /usr/bin/time ] || need /usr/bin/time time

# SKIP_BUILD=1 uses the binaries already in target/release.
[ "${SKIP_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release --quiet --bin soif --bin soif-gen)

DATA=$WORK/bench.soif
JSONL=$WORK/bench.jsonl
HUGE=$WORK/huge.soif
[ -s "$DATA" ] || "$GEN" --size "$SIZE" -o "$DATA"
[ -s "$JSONL" ] || "$SOIF" convert "$DATA" --to jsonl -q -o "$JSONL"
[ -s "$HUGE" ] || "$GEN" --size "$HUGE_SIZE" --huge -o "$HUGE"
soif_bytes=$(stat -c %s "$DATA")
jsonl_bytes=$(stat -c %s "$JSONL")
huge_bytes=$(stat -c %s "$HUGE")
records=$("$SOIF" convert "$DATA" --to null 2>&1 | sed -n 's/^soif: \([0-9]*\) records in.*/\1/p')

echo "# soif benchmark: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -sr)"
echo "# input: $soif_bytes bytes of SOIF ($records records), $jsonl_bytes bytes as JSON Lines"
echo

names=("soif convert --to jsonl" "soif convert --to null" "cat" "jq -c ." "soif --to null, one ${HUGE_SIZE} record")
cmds=(
    "$SOIF convert $DATA --to jsonl -q -o /dev/null"
    "$SOIF convert $DATA --to null -q"
    "cat $DATA > /dev/null"
    "jq -c . $JSONL > /dev/null"
    "$SOIF convert $HUGE --to null -q --max-record-size 1GiB"
)
sizes=("$soif_bytes" "$soif_bytes" "$soif_bytes" "$jsonl_bytes" "$huge_bytes")

printf '| %-34s | %10s | %9s | %13s |\n' "command" "mean s" "MB/s" "peak RSS MiB"
printf '|%s|%s|%s|%s|\n' "------------------------------------" "------------" "-----------" "---------------"
for i in "${!cmds[@]}"; do
    json=$WORK/hf-$i.json
    hyperfine --style none --warmup 1 --runs "$RUNS" --export-json "$json" "${cmds[$i]}" >/dev/null 2>&1
    mean=$(jq '.results[0].mean' "$json")
    rss_kb=$( { /usr/bin/time -f '%M' sh -c "${cmds[$i]}" >/dev/null; } 2>&1 | tail -1)
    mbps=$(awk -v b="${sizes[$i]}" -v t="$mean" 'BEGIN { printf "%.0f", b / 1e6 / t }')
    printf '| %-34s | %10.3f | %9s | %13.1f |\n' "${names[$i]}" "$mean" "$mbps" "$(awk -v k="$rss_kb" 'BEGIN { print k / 1024 }')"
done

CSV=$WORK/bench.csv
DB=$WORK/bench.db
[ -s "$CSV" ] || "$SOIF" convert "$DATA" --to csv -q -o "$CSV"
csv_bytes=$(stat -c %s "$CSV")
echo
echo "# SQLite load: $records records; the CSV copy is $csv_bytes bytes"
echo
snames=("soif convert --to sqlite" "sqlite3 .import --csv (same data)")
scmds=(
    "$SOIF convert $DATA --to sqlite -q -o $DB"
    "sqlite3 $DB '.import --csv $CSV FILE'"
)
printf '| %-34s | %10s | %11s | %13s |\n' "load into SQLite" "mean s" "records/s" "peak RSS MiB"
printf '|%s|%s|%s|%s|\n' "------------------------------------" "------------" "-------------" "---------------"
for i in "${!scmds[@]}"; do
    json=$WORK/hf-sqlite-$i.json
    hyperfine --style none --warmup 1 --runs "$RUNS" --prepare "rm -f $DB $DB-wal $DB-shm" \
        --export-json "$json" "${scmds[$i]}" >/dev/null 2>&1
    mean=$(jq '.results[0].mean' "$json")
    rm -f "$DB" "$DB-wal" "$DB-shm"
    rss_kb=$( { /usr/bin/time -f '%M' sh -c "${scmds[$i]}" >/dev/null; } 2>&1 | tail -1)
    rm -f "$DB" "$DB-wal" "$DB-shm"
    rps=$(awk -v n="$records" -v t="$mean" 'BEGIN { printf "%.0f", n / t }')
    printf '| %-34s | %10.3f | %11s | %13.1f |\n' "${snames[$i]}" "$mean" "$rps" "$(awk -v k="$rss_kb" 'BEGIN { print k / 1024 }')"
done
echo
echo "# data kept in $WORK (delete it when done)"
