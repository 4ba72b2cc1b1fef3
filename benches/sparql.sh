#!/usr/bin/env bash
# Loading a SPARQL store: soif's `sparql` sink against Oxigraph's own ways of loading the
# same triples, on the generated corpus (soif-gen, as benches/compare.sh makes it).
#
#   benches/sparql.sh                                   # SIZE=200MB
#   WORK=/tmp/sparqlbench SIZE=5MB benches/sparql.sh    # a quick check
#   ROWS="one bulk" benches/sparql.sh                  # some rows only (soif update one bulk)
#
# Rows (wall seconds; records per second; peak RSS of the loading process; CPU seconds
# of the loading process and of the server):
#   soif convert x.soif --to sparql -o http://…/update --graph-store 'http://…/store?no_transaction'
#                                                            drops by update, N-Quads bulk-loaded
#   soif convert x.soif --to sparql -o http://…/update      SPARQL Update alone
#   one PUT /store?graph=G per record (the Graph Store Protocol, N-Triples, keep-alive)
#   oxigraph load --file x.nt                                the bulk loader, no server
# Each server is Oxigraph's (`oxigraph serve --location DIR`, on disk, fresh for each
# row) from the `oxigraph` package in .venv (installed there when missing). The triples
# are those of `soif convert --to ntriples`; after each row the store is asked how many
# triples it holds, and the script stops if a row's count differs. Targets: soif at least
# 3× the one-record-at-a-time load, and within 2× of the bulk load. Uses target/release
# (or $CARGO_TARGET_DIR/release); builds it unless SKIP_BUILD=1 (PROFILE=debug with
# SKIP_BUILD=1 checks the script itself: its figures mean nothing).
# Figures: docs/performance.md#loading-a-sparql-store.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PROFILE=${PROFILE:-release}
SOIF=$TARGET/$PROFILE/soif
GEN=$TARGET/$PROFILE/soif-gen
SIZE=${SIZE:-200MB}
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/soif-sparqlbench.XXXXXX")}
mkdir -p "$WORK"
cd "$ROOT"
[ "${SKIP_BUILD:-0}" = 1 ] || cargo build --release --locked --quiet -p soif --bin soif --bin soif-gen
[ -x .venv/bin/python ] || python3 -m venv .venv
[ -x .venv/bin/oxigraph ] || .venv/bin/python -m pip install --quiet "oxigraph>=0.5,<0.6"
OXIGRAPH=$ROOT/.venv/bin/oxigraph
PY=$ROOT/.venv/bin/python

DATA=$WORK/corpus-$SIZE.soif
[ -s "$DATA" ] || "$GEN" --size "$SIZE" -o "$DATA"
NT=$WORK/corpus-$SIZE.nt
[ -s "$NT" ] || "$SOIF" convert "$DATA" --to ntriples -q -o "$NT"
RECORDS=$("$SOIF" convert "$DATA" --to null 2>&1 | sed -n 's/^soif: \([0-9]*\) records in.*/\1/p')
# Distinct triples (a record may repeat a value): what each store must hold.
TRIPLES=$(LC_ALL=C sort -u "$NT" | wc -l)

SERVER=
stop_server() {
    if [ -n "$SERVER" ]; then
        kill "$SERVER" 2>/dev/null || true
        wait "$SERVER" 2>/dev/null || true
        SERVER=
    fi
}
trap stop_server EXIT

# start_server DIR [keep]: an Oxigraph server on a free loopback port over DIR (emptied
# first unless `keep`), its base URL in $BASE.
start_server() {
    [ "${2:-}" = keep ] || rm -rf "$1"
    local port
    port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$OXIGRAPH" serve --location "$1" --bind "127.0.0.1:$port" >"$WORK/server.log" 2>&1 &
    SERVER=$!
    BASE=http://127.0.0.1:$port
    for _ in $(seq 300); do
        curl -sf -o /dev/null "$BASE/query?query=ASK%7B%7D" && return 0
        sleep 0.1
    done
    echo "oxigraph serve did not start: $(cat "$WORK/server.log")" >&2
    exit 1
}

# count: the distinct triples in the store at $BASE, over all graphs.
count() {
    curl -sf -H 'Accept: text/csv' --data-urlencode \
        'query=SELECT (COUNT(*) AS ?n) WHERE { SELECT DISTINCT ?s ?p ?o WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } } }' \
        "$BASE/query" | tail -1 | tr -d '\r'
}

# server_cpu: the CPU seconds (user + system) the server has used so far, or 0.
server_cpu() {
    if [ -n "$SERVER" ] && [ -r "/proc/$SERVER/stat" ]; then
        awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f\n", ($14 + $15) / hz }' "/proc/$SERVER/stat"
    else
        echo 0
    fi
}

# timed CMD...: runs it, prints "seconds peak_rss_mib cpu_seconds server_cpu_seconds"
# (the server's CPU while CMD ran).
timed() {
    local before
    before=$(server_cpu)
    /usr/bin/time -o "$WORK/time.txt" -f '%e %M %U %S' "$@" >/dev/null 2>"$WORK/stderr.txt" || {
        cat "$WORK/stderr.txt" >&2
        exit 1
    }
    local e m u s
    read -r e m u s < <(tail -1 "$WORK/time.txt")
    printf '%s %.1f %.2f %.2f\n' "$e" "$(echo "$m / 1024" | bc -l)" "$(echo "$u + $s" | bc -l)" \
        "$(echo "$(server_cpu) - $before" | bc -l)"
}

check() { # check ROW COUNT
    if [ "$2" != "$TRIPLES" ]; then
        echo "$1: the store holds $2 triples, not $TRIPLES" >&2
        exit 1
    fi
}

# One PUT per record: consecutive lines with the same subject are one record's triples.
cat >"$WORK/one_by_one.py" <<'EOF'
import http.client, sys, urllib.parse
host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
conn = http.client.HTTPConnection(host, port)
def put(subject, lines):
    g = subject[1:-1] if subject.startswith("<") else "urn:x-soif:blank:" + subject[2:]
    conn.request("PUT", "/store?graph=" + urllib.parse.quote(g, safe=""), body=b"".join(lines),
                 headers={"Content-Type": "application/n-triples"})
    r = conn.getresponse()
    r.read()
    if r.status >= 300:
        sys.exit(f"HTTP {r.status} for {g}")
subject, lines = None, []
with open(path, "rb") as f:
    for line in f:
        s = line.split(b" ", 1)[0].decode()
        if s != subject and lines:
            put(subject, lines)
            lines = []
        subject = s
        lines.append(line)
if lines:
    put(subject, lines)
EOF

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); cores: $(nproc); load: $(cut -d' ' -f1-3 /proc/loadavg); $("$OXIGRAPH" --version)"
echo "input: $SIZE generated ($RECORDS records; $(stat -c %s "$DATA") bytes of SOIF; $TRIPLES triples, $(stat -c %s "$NT") bytes of N-Triples)"
printf '| %-64s | %8s | %10s | %12s | %8s | %12s |\n' load seconds records/s "peak RSS MiB" "CPU s" "server CPU s"
printf '|%s|%s|%s|%s|%s|%s|\n' ------------------------------------------------------------------ ---------- ------------ -------------- ---------- --------------
row() { # row LABEL SECONDS RSS CPU SERVER_CPU
    printf '| %-64s | %8s | %10.0f | %12s | %8s | %12s |\n' "$1" "$2" "$(echo "$RECORDS / $2" | bc -l)" "$3" "$4" "$5"
}

ROWS=${ROWS:-"soif update one bulk"}
SOIF_S= ONE_S= BULK_S=
if [[ " $ROWS " == *" soif "* ]]; then
start_server "$WORK/db-soif"
read -r SOIF_S m c sc < <(timed "$SOIF" convert "$DATA" --to sparql -o "$BASE/update" \
    --graph-store "$BASE/store?no_transaction" -q)
check soif "$(count)"
row "soif convert --to sparql --graph-store …/store?no_transaction" "$SOIF_S" "$m" "$c" "$sc"
stop_server
fi

if [[ " $ROWS " == *" update "* ]]; then
start_server "$WORK/db-update"
read -r s m c sc < <(timed "$SOIF" convert "$DATA" --to sparql -o "$BASE/update" -q)
check update "$(count)"
row "soif convert --to sparql (SPARQL Update alone)" "$s" "$m" "$c" "$sc"
stop_server
fi

if [[ " $ROWS " == *" one "* ]]; then
start_server "$WORK/db-one"
read -r ONE_S m c sc < <(timed "$PY" "$WORK/one_by_one.py" 127.0.0.1 "${BASE##*:}" "$NT")
check one-by-one "$(count)"
row "one PUT /store?graph=G per record (N-Triples)" "$ONE_S" "$m" "$c" "$sc"
stop_server
fi

if [[ " $ROWS " == *" bulk "* ]]; then
rm -rf "$WORK/db-bulk"
read -r BULK_S m c sc < <(timed "$OXIGRAPH" load --location "$WORK/db-bulk" --file "$NT")
start_server "$WORK/db-bulk" keep
check bulk "$(count)"
stop_server
row "oxigraph load --file x.nt (bulk, no server)" "$BULK_S" "$m" "$c" "-"
fi

if [ -n "$SOIF_S" ] && [ -n "$ONE_S" ] && [ -n "$BULK_S" ]; then
    echo "soif: $(printf '%.1f' "$(echo "$ONE_S / $SOIF_S" | bc -l)")× the one-record-at-a-time load (target ≥ 3×), $(printf '%.2f' "$(echo "$SOIF_S / $BULK_S" | bc -l)")× the bulk load's time (target ≤ 2×)"
fi
