#!/usr/bin/env bash
# soif verify against the conversion that made its target, on generated Harvest-like
# data (soif-gen, as benches/compare.sh): a SQLite catalog and a Parquet file.
#
#   benches/verify.sh                        # SIZES="200MB 1GB", RUNS=3
#   WORK=/tmp/verifybench SIZES=200MB RUNS=1 benches/verify.sh
#
# For each size and target: wall seconds (mean of RUNS) and peak RSS (/usr/bin/time %M,
# the largest of the runs) of
#   soif convert x.soif --to sqlite -o x.db        (a new database each run)
#   soif verify  x.soif --against x.db
#   soif convert x.soif --to parquet -o x.parquet
#   soif verify  x.soif --against x.parquet
# and verify's time as a multiple of the conversion's (docs/verify.md: at most 1.5×,
# peak memory under 128 MiB and flat from 200 MB to 1 GB). The load average is printed:
# figures taken on a busy machine say little.
# Uses target/release (or $CARGO_TARGET_DIR/release); builds it unless SKIP_BUILD=1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
SOIF=$TARGET/release/soif
GEN=$TARGET/release/soif-gen
SIZES=${SIZES:-"200MB 1GB"}
RUNS=${RUNS:-3}
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/soif-verifybench.XXXXXX")}
mkdir -p "$WORK"
[ "${SKIP_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release --quiet --bin soif --bin soif-gen)

# measure CMD...: prints "mean_s peak_rss_mib" over RUNS runs; PREP (if set) runs before
# each run, untimed. Exit status 3 (a mismatch) is not a failure of the measurement, but
# is reported.
measure() {
    local total=0 peak=0 i out s m rc
    for i in $(seq "$RUNS"); do
        [ -z "${PREP:-}" ] || eval "$PREP"
        rc=0
        /usr/bin/time -o "$WORK/time.txt" -f '%e %M' "$@" >/dev/null 2>"$WORK/stderr.txt" || rc=$?
        if [ "$rc" -ne 0 ]; then
            echo "exit $rc: $*" >&2
            cat "$WORK/stderr.txt" >&2
        fi
        out=$(tail -1 "$WORK/time.txt")
        s=${out% *}; m=${out#* }
        total=$(echo "$total + $s" | bc -l)
        [ "$m" -gt "$peak" ] && peak=$m
    done
    printf '%.3f %.1f\n' "$(echo "$total / $RUNS" | bc -l)" "$(echo "$peak / 1024" | bc -l)"
}

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); cores: $(nproc); runs: $RUNS; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| %-6s | %-8s | %-10s | %8s | %12s | %8s |\n' size target command "mean s" "peak RSS MiB" "verify/convert"
printf '|%s|%s|%s|%s|%s|%s|\n' -------- ---------- ------------ ---------- -------------- ----------
for SIZE in $SIZES; do
    DATA=$WORK/bench-$SIZE.soif
    [ -s "$DATA" ] || "$GEN" --size "$SIZE" -o "$DATA"
    for TO in sqlite parquet; do
        OUT=$WORK/out-$SIZE.$([ "$TO" = sqlite ] && echo db || echo parquet)
        read -r cs cm < <(PREP="rm -f '$OUT' '$OUT-wal' '$OUT-shm'" measure "$SOIF" convert "$DATA" --to "$TO" -q -o "$OUT")
        read -r vs vm < <(measure "$SOIF" verify "$DATA" --against "$OUT" -q)
        printf '| %-6s | %-8s | %-10s | %8s | %12s | %8s |\n' "$SIZE" "$TO" convert "$cs" "$cm" ""
        printf '| %-6s | %-8s | %-10s | %8s | %12s | %8.2f |\n' "$SIZE" "$TO" verify "$vs" "$vm" "$(echo "$vs / $cs" | bc -l)"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
