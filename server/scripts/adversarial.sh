#!/usr/bin/env bash
# Hostile clients against `soif serve` (loopback only, bounded in time and count): the
# figures of docs/performance.md, "Hostile clients".
#
#   cargo build --release --bin soif --bin soif-gen
#   cargo build --release -p soif-server --example rdm_hostile
#   server/scripts/adversarial.sh [CATALOG_SIZE] [SUBMISSION_SIZE] [SECONDS]
#                                 # defaults: 20MB 100MB 30 (SUBMISSION_SIZE 0: none)
#
# Loads CATALOG_SIZE of soif-gen data into a catalog, starts a release `soif serve` with
# a token on 127.0.0.1, samples its VmRSS every 0.2 s (/proc/PID/status), and runs the
# rdm_hostile example for SECONDS: 100 stalled whole-catalog readers, 100 slowloris
# connections, 8 loops of unauthenticated 100 MB submissions, one authenticated
# SUBMISSION_SIZE rd-response streamed as a single POST, and a status request every
# 100 ms whose latency is measured. Prints the example's figures and the server's RSS
# (before, peak during, at the end). Everything stops by itself; the server is stopped
# by its own process id.
set -euo pipefail

catalog_size=${1:-20MB}
submission_size=${2:-100MB}
seconds=${3:-30}
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
soif=$target/release/soif
gen=$target/release/soif-gen
hostile=$target/release/examples/rdm_hostile
for b in "$soif" "$gen" "$hostile"; do
    [[ -x $b ]] || { echo "missing $b (see the build commands at the top)" >&2; exit 2; }
done
work=$(mktemp -d)
server_pid=
sampler_pid=
cleanup() {
    [[ -n $sampler_pid ]] && kill "$sampler_pid" 2>/dev/null || true
    [[ -n $server_pid ]] && kill -TERM "$server_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

"$gen" --size "$catalog_size" -o "$work/catalog.soif"
"$soif" convert "$work/catalog.soif" --to sqlite -o "$work/catalog.db" -q
submit=()
if [[ $submission_size != 0 ]]; then
    "$gen" --size "$submission_size" --seed 7 -o "$work/submission.soif"
    submit=(--submit "$work/submission.soif")
fi
port=$((20000 + RANDOM % 20000))
token=adversarial-$RANDOM

"$soif" serve --db "$work/catalog.db" --listen "127.0.0.1:$port" --token "$token" -q \
    > "$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/rdm/incoming?type=rd-request&ql=sample-keyword-ql&scope=warmup" \
        >/dev/null 2>&1 && break
    sleep 0.1
done
sleep 1

rss() { awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status" 2>/dev/null || echo 0; }
before=$(rss)
(
    while kill -0 "$server_pid" 2>/dev/null; do
        echo "$(date +%s.%N) $(rss)"
        sleep 0.2
    done
) > "$work/rss.log" &
sampler_pid=$!

"$hostile" "127.0.0.1:$port" "$seconds" --token "$token" "${submit[@]}"

sleep 1
after=$(rss)
kill "$sampler_pid" 2>/dev/null || true
wait "$sampler_pid" 2>/dev/null || true
sampler_pid=
peak=$(awk 'BEGIN {m = 0} $2 > m {m = $2} END {print m}' "$work/rss.log")
samples=$(wc -l < "$work/rss.log")
printf 'server VmRSS: %.1f MB before, %.1f MB peak during the run (%d samples), %.1f MB after\n' \
    "$(echo "$before / 1024" | bc -l)" "$(echo "$peak / 1024" | bc -l)" "$samples" \
    "$(echo "$after / 1024" | bc -l)"
# VmRSS over the run, one sample every ~5 s: flat means a plateau, not a climb.
awk 'NR == 1 {t0 = $1} ($1 - t0) >= next_t {printf "%s%.0fs %.1f MB", sep, $1 - t0, $2 / 1024; sep = ", "; next_t += 5} END {print ""}' \
    "$work/rss.log" | sed 's/^/server VmRSS over time: /'
printf 'open files of the server at the end: %s\n' "$(ls /proc/$server_pid/fd 2>/dev/null | wc -l)"
