#!/usr/bin/env bash
# Compares soif with other tools on the same generated Harvest-like data.
#
#   benches/compare.sh                 # 200 MB of records (SIZE=200MB)
#   SIZE=2GB RUNS=1 benches/compare.sh
#   WORK=/tmp/bench SKIP_BUILD=1 benches/compare.sh   # reuse data and binaries
#
# Times (hyperfine, mean of RUNS runs after one warm-up) and peak RSS (/usr/bin/time):
#   soif convert --to jsonl    SOIF -> JSON Lines
#   soif convert --to null     parse and count only (a plain file is mapped and decoded
#                              in place; --no-mmap and stdin read it as a stream)
#   soif --to null, gzip'd     the same data as a .gz (gzip -6): decompression on the
#                              source's thread, ahead of the decoder
#   zcat                       the same .gz decompressed by gzip itself
#   cat                        the floor: reading the file
#   jq -c .                    re-printing the same data as JSON Lines
# plus one record whose value is SIZE bytes (soif --to null), for memory;
# and loading SQLite (records/s and MB/s of SOIF, into a new database each run), for the
# Harvest-like records and for summary objects only (soif-gen --summaries-only):
#   soif convert --to sqlite   SOIF -> a table per template (10,000 rows or 64 MiB per
#                              commit; a new database is bulk-loaded, see
#                              docs/sqlite-layout.md)
#   sqlite3 .import --csv      sqlite3's own CSV import of the same records (as CSV)
#   sqlite3 copying the rows   the ceiling: sqlite3 copying the rows soif loaded into a new
#                              database, same layout and page size, no journal, no syncs
# MB/s is the SOIF input size (10^6 bytes) over the mean time (for the .gz rows too: the
# SOIF they decompress to); jq's figure is over the JSON Lines input it reads.
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
GZ=$WORK/bench.soif.gz
[ -s "$DATA" ] || "$GEN" --size "$SIZE" -o "$DATA"
[ -s "$GZ" ] || gzip -6 -c "$DATA" >"$GZ"
[ -s "$JSONL" ] || "$SOIF" convert "$DATA" --to jsonl -q -o "$JSONL"
[ -s "$HUGE" ] || "$GEN" --size "$HUGE_SIZE" --huge -o "$HUGE"
soif_bytes=$(stat -c %s "$DATA")
jsonl_bytes=$(stat -c %s "$JSONL")
huge_bytes=$(stat -c %s "$HUGE")
records=$("$SOIF" convert "$DATA" --to null 2>&1 | sed -n 's/^soif: \([0-9]*\) records in.*/\1/p')

echo "# soif benchmark: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(uname -sr)"
echo "# input: $soif_bytes bytes of SOIF ($records records), $jsonl_bytes bytes as JSON Lines"
echo

names=("soif convert --to jsonl" "soif convert --to null" "soif --to null --no-mmap" "soif --to null < stdin"
    "soif --to null, gzip'd input" "zcat (the same .gz)" "cat" "jq -c ."
    "soif --to null, one ${HUGE_SIZE} record" "the same, --no-mmap")
cmds=(
    "$SOIF convert $DATA --to jsonl -q -o /dev/null"
    "$SOIF convert $DATA --to null -q"
    "$SOIF convert $DATA --to null -q --no-mmap"
    "$SOIF convert --to null -q < $DATA"
    "$SOIF convert $GZ --to null -q"
    "zcat $GZ > /dev/null"
    "cat $DATA > /dev/null"
    "jq -c . $JSONL > /dev/null"
    "$SOIF convert $HUGE --to null -q --max-record-size 1GiB"
    "$SOIF convert $HUGE --to null -q --max-record-size 1GiB --no-mmap"
)
sizes=("$soif_bytes" "$soif_bytes" "$soif_bytes" "$soif_bytes" "$soif_bytes" "$soif_bytes" "$soif_bytes" "$jsonl_bytes"
    "$huge_bytes" "$huge_bytes")

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

# SQLite: the same Harvest-like records (8 KB on average: a quarter carry a 5-50 KB
# Full-Text), then summary objects only (the same records without Full-Text and
# Thumbnail, about 1.1 KB), each into a new database file every run, and each beside
# sqlite3's own CSV import of the same records.
SUMS=$WORK/summaries.soif
[ -s "$SUMS" ] || "$GEN" --size "$SIZE" --summaries-only -o "$SUMS"
DB=$WORK/bench.db
sqlite_load() { # label soif-file
    local label=$1 data=$2 csv=${2%.soif}.csv
    [ -s "$csv" ] || "$SOIF" convert "$data" --to csv -q -o "$csv"
    # Each load starts with nothing else waiting to be written back (hyperfine's
    # --prepare syncs too): a previous run's dirty pages would slow this one's final sync.
    sync
    local n bytes
    n=$("$SOIF" convert "$data" --to null 2>&1 | sed -n 's/^soif: \([0-9]*\) records in.*/\1/p')
    bytes=$(stat -c %s "$data")
    echo
    echo "# SQLite load, $label: $n records, $bytes bytes of SOIF, $(stat -c %s "$csv") bytes as CSV"
    echo
    # The ceiling for any SQLite loader here: sqlite3 copying the same rows, already
    # in a database in the page cache, into a new one with the same layout and page size,
    # with no journal and no syncs at all (so no parsing, no binding and no durability).
    local src=${data%.soif}-loaded.db floor_sql=${data%.soif}-floor.sql
    [ -s "$src" ] || "$SOIF" convert "$data" --to sqlite -q -o "$src"
    {
        echo "PRAGMA page_size = 16384; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
        echo "PRAGMA cache_size = -16384; ATTACH '$src' AS o; BEGIN;"
        sqlite3 "$src" "SELECT sql || ';' FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
        sqlite3 "$src" "SELECT 'INSERT INTO main.\"' || name || '\" SELECT * FROM o.\"' || name || '\" ORDER BY rowid;'
                        FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        echo "COMMIT;"
    } >"$floor_sql"
    local snames=("soif convert --to sqlite" "sqlite3 .import --csv (same data)" "sqlite3 copying the rows (ceiling)")
    local scmds=(
        "$SOIF convert $data --to sqlite -q -o $DB"
        "sqlite3 $DB '.import --csv $csv FILE'"
        "sqlite3 $DB < $floor_sql"
    )
    printf '| %-34s | %10s | %11s | %9s | %13s |\n' "load into SQLite" "mean s" "records/s" "MB/s" "peak RSS MiB"
    printf '|%s|%s|%s|%s|%s|\n' "------------------------------------" "------------" "-------------" "-----------" "---------------"
    for i in "${!scmds[@]}"; do
        local json=$WORK/hf-sqlite-$i.json
        hyperfine --style none --warmup 1 --runs "$RUNS" --prepare "rm -f $DB $DB-wal $DB-shm $DB-journal; sync" \
            --export-json "$json" "${scmds[$i]}" >/dev/null 2>&1
        local mean rss_kb rps mbps
        mean=$(jq '.results[0].mean' "$json")
        rm -f "$DB" "$DB-wal" "$DB-shm" "$DB-journal"
        sync
        rss_kb=$( { /usr/bin/time -f '%M' sh -c "${scmds[$i]}" >/dev/null; } 2>&1 | tail -1)
        rm -f "$DB" "$DB-wal" "$DB-shm" "$DB-journal"
        rps=$(awk -v n="$n" -v t="$mean" 'BEGIN { printf "%.0f", n / t }')
        mbps=$(awk -v b="$bytes" -v t="$mean" 'BEGIN { printf "%.0f", b / 1e6 / t }')
        printf '| %-34s | %10.3f | %11s | %9s | %13.1f |\n' "${snames[$i]}" "$mean" "$rps" "$mbps" "$(awk -v k="$rss_kb" 'BEGIN { print k / 1024 }')"
    done
}
sqlite_load "Harvest-like records" "$DATA"
sqlite_load "summary objects only (--summaries-only)" "$SUMS"
echo
echo "# data kept in $WORK (delete it when done)"
