#!/usr/bin/env bash
# Measures a full OAI-PMH harvest of a generated catalog: records/s and the server's
# peak RSS (docs/performance.md, "OAI-PMH"). Loopback only.
#
#   cargo build --release --bin soif --bin soif-gen
#   server/scripts/oai_harvest.sh 100MB 500 oai_dc     # SIZE PAGE-SIZE PREFIX
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZE="${1:-100MB}"
PAGE="${2:-500}"
PREFIX="${3:-oai_dc}"
BIN="${BIN:-target/release}"
WORK="${WORK:-$(mktemp -d)}"
mkdir -p "$WORK"
"$BIN/soif-gen" --size "$SIZE" --summaries-only -o "$WORK/data.soif"
rm -f "$WORK/catalog.db"
"$BIN/soif" convert "$WORK/data.soif" --to sqlite -o "$WORK/catalog.db" -q
/usr/bin/time -f "%M" -o "$WORK/rss" "$BIN/soif" serve --db "$WORK/catalog.db" \
    --listen 127.0.0.1:0 --oai-page-size "$PAGE" --oai-repository-id bench.example.org \
    2> "$WORK/serve.log" &
pid=$!
for _ in $(seq 50); do grep -q 'serving http' "$WORK/serve.log" 2>/dev/null && break; sleep 0.1; done
addr=$(grep -o 'http://127.0.0.1:[0-9]*' "$WORK/serve.log" | head -1)
server=$(pgrep -P $pid soif || echo $pid)
# The keyword index is built in the background at start; a keyword query waits for it,
# so that the harvest is timed alone.
curl -sf "$addr/rdm/incoming?type=rd-request&ql=sample-keyword-ql&scope=zzzz" -o /dev/null || true
rss() { awk '/VmRSS/ {print $2}' "/proc/$server/status"; }
base_rss=$(rss); max_rss=$base_rss
start=$(date +%s.%N)
url="$addr/oai?verb=ListRecords&metadataPrefix=$PREFIX"
records=0; pages=0
while :; do
    curl -sf "$url" -o "$WORK/page.xml"
    n=$(grep -o '<record>' "$WORK/page.xml" | wc -l)
    records=$((records + n)); pages=$((pages + 1))
    r=$(rss); [ "$r" -gt "$max_rss" ] && max_rss=$r
    token=$(grep -o '<resumptionToken[^>]*>[^<]*</resumptionToken>' "$WORK/page.xml" | sed 's/<[^>]*>//g' || true)
    [ -n "$token" ] || break
    url="$addr/oai?verb=ListRecords&resumptionToken=$token"
done
end=$(date +%s.%N)
kill -INT "$server" 2>/dev/null || kill $pid
wait $pid 2>/dev/null || true
secs=$(echo "$end - $start" | bc -l)
printf 'records %d, pages %d (page size %s, %s), %.2f s, %.0f records/s; server RSS %.1f MiB before the harvest, at most %.1f MiB during it (sampled after each page); peak over its life %.1f MiB\n' \
    "$records" "$pages" "$PAGE" "$PREFIX" "$secs" "$(echo "$records / $secs" | bc -l)" \
    "$(echo "$base_rss / 1024" | bc -l)" "$(echo "$max_rss / 1024" | bc -l)" \
    "$(echo "$(cat "$WORK/rss") / 1024" | bc -l)"
