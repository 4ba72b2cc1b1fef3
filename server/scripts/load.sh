#!/usr/bin/env bash
# Requests/s and peak memory of `soif serve` under concurrent clients (loopback only).
#
#   cargo build --release --bin soif --bin soif-gen
#   cargo build --release -p soif-server --example rdm_load
#   server/scripts/load.sh [SIZE] [CLIENTS] [SECONDS]      # defaults: 20MB 32 10
#
# Generates SIZE of Harvest-like SOIF (soif-gen), loads it into a SQLite catalog, then for
# each request starts a fresh server under /usr/bin/time and runs the rdm_load example
# against it for SECONDS with CLIENTS keep-alive clients; prints the load generator's line
# and the server's peak resident memory. Everything runs on 127.0.0.1 and stops by itself.
set -euo pipefail

size=${1:-20MB}
clients=${2:-32}
seconds=${3:-10}
root=$(cd "$(dirname "$0")/../.." && pwd)
soif=$root/target/release/soif
gen=$root/target/release/soif-gen
load=$root/target/release/examples/rdm_load
for b in "$soif" "$gen" "$load"; do
    [[ -x $b ]] || { echo "missing $b (see the build commands at the top)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gen" --size "$size" -o "$work/data.soif"
"$soif" convert "$work/data.soif" --to sqlite -o "$work/catalog.db" -q
port=$((20000 + RANDOM % 20000))
base="http://127.0.0.1:$port/rdm/incoming"

run() {
    local label=$1 query=$2 n=$3
    # All clients come from 127.0.0.1: let one address have them all in flight.
    /usr/bin/time -f '%M' -o "$work/rss" "$soif" serve --db "$work/catalog.db" \
        --listen "127.0.0.1:$port" --max-reads-per-client "$clients" -q &
    local pid=$!
    # Ready once it answers a status request (and the keyword index is built).
    for _ in $(seq 1 600); do
        curl -sf "$base?type=rd-request&ql=sample-keyword-ql&scope=warmup" >/dev/null 2>&1 && break
        sleep 0.1
    done
    local line
    line=$("$load" "$base?$query" "$n" "$seconds")
    kill -TERM "$(pgrep -P "$pid" || echo "$pid")" 2>/dev/null || true
    wait "$pid" || true
    printf '%-34s %s; server peak RSS %.1f MB\n' "$label" "$line" "$(($(cat "$work/rss")))e-3"
}

run "status-request" "type=status-request" "$clients"
run "rd-request keyword, 10 hits" \
    "type=rd-request&ql=sample-keyword-ql&scope=protocol+library&view-hits=10&view-attributes=url,title,score" "$clients"
run "rd-request all, 10 hits" \
    "type=rd-request&ql=gatherer&scope=all&view-hits=10&view-attributes=url,title" "$clients"
run "rd-request all (whole catalog)" "type=rd-request&ql=gatherer&scope=all" 4
