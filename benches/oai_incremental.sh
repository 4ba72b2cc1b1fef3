#!/usr/bin/env bash
# The cost of an incremental OAI-PMH run (docs/performance.md, "OAI-PMH"): a generated
# catalog served by `soif serve` on loopback, mirrored into SQLite by `soif convert
# oai+http://… --state` — a full harvest, then a run after CHANGED records were changed
# and DELETED deleted, then a run with nothing changed. Each run's wall time, peak RSS,
# records fetched and requests (the server's own count, from its status document) are
# printed; the mirror is compared with the catalog at the end.
#
#   cargo build --release --bin soif --bin soif-gen
#   benches/oai_incremental.sh 100MB 500 1000 100     # SIZE PAGE-SIZE CHANGED DELETED
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE="${1:-100MB}"
PAGE="${2:-500}"
CHANGED="${3:-1000}"
DELETED="${4:-100}"
BIN="${BIN:-target/release}"
WORK="${WORK:-$(mktemp -d)}"
TOKEN=bench-token
mkdir -p "$WORK"
"$BIN/soif-gen" --size "$SIZE" --summaries-only -o "$WORK/data.soif"
rm -f "$WORK/catalog.db" "$WORK/mirror.db" "$WORK/state.db"
"$BIN/soif" convert "$WORK/data.soif" --to sqlite -o "$WORK/catalog.db" -q
"$BIN/soif" serve --db "books=$WORK/catalog.db" --listen 127.0.0.1:0 --token "$TOKEN" \
    --oai-page-size "$PAGE" --oai-repository-id bench.example.org 2> "$WORK/serve.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q 'serving http' "$WORK/serve.log" 2>/dev/null && break; sleep 0.1; done
addr=$(grep -o 'http://127.0.0.1:[0-9]*' "$WORK/serve.log" | head -1)
host=${addr#http://}
src="oai+$addr/oai/books?metadataPrefix=soif"

# The server's request count (its status document's "Requests" line; the status
# request itself is one).
served() {
    curl -sf "$addr/rdm/incoming?type=status-request" | grep -a -o '<DT>Requests<DD>[0-9]*' | grep -o '[0-9]*$'
}
next_second() { local s; s=$(date -u +%s); while [ "$(date -u +%s)" = "$s" ]; do sleep 0.05; done; }

run() {  # LABEL
    local before after
    before=$(served)
    /usr/bin/time -f "%e %M" -o "$WORK/time" "$BIN/soif" convert "$src" --state "$WORK/state.db" \
        --to sqlite -o "$WORK/mirror.db" 2> "$WORK/run.log"
    after=$(served)
    read -r secs rss < "$WORK/time"
    records=$(grep -o '[0-9]* records in' "$WORK/run.log" | awk '{print $1}' || true)
    records=${records:-0}
    printf '%-22s %8s records fetched  %5d requests  %7.2f s  peak RSS %6.1f MiB\n' \
        "$1" "$records" $((after - before - 1)) "$secs" "$(echo "$rss / 1024" | bc -l)"
}

next_second
run "full harvest"
# CHANGED records get a new Title, DELETED others are deleted (through the RDM
# submissions the server takes, so the catalog's datestamps move as they would).
grep -a -o '^@FILE { [^ ]*$' "$WORK/data.soif" | sed 's/^@FILE { //' > "$WORK/urls"
head -n "$CHANGED" "$WORK/urls" | awk '{printf "@FILE { %s\nTitle{7}:\tchanged\n}\n", $0}' > "$WORK/changed.soif"
tail -n "$DELETED" "$WORK/urls" | awk 'BEGIN{print "@DELETE {"} {printf "@FILE { %s\n}\n", $0} END{print "}"}' > "$WORK/deleted.soif"
"$BIN/soif" convert "$WORK/changed.soif" --to rdm -o "x-catalog://$host/books" --token "$TOKEN" -q
"$BIN/soif" convert "$WORK/deleted.soif" --to rdm -o "x-catalog://$host/books" --token "$TOKEN" -q
next_second
run "after changes"
next_second
run "nothing changed"

# The mirror holds what the catalog holds.
dump() {
    sqlite3 "$1" "SELECT count(*), sum(length(url)), sum(length(\"Title\")) FROM file"
}
if [ "$(dump "$WORK/catalog.db")" = "$(dump "$WORK/mirror.db")" ]; then
    echo "mirror = catalog ($(dump "$WORK/mirror.db"))"
else
    echo "mirror differs: catalog $(dump "$WORK/catalog.db"), mirror $(dump "$WORK/mirror.db")" >&2
    exit 1
fi
