#!/usr/bin/env bash
# soif's N-Triples output against rapper (Raptor, the RDF parser toolkit) converting
# soif's RDF/XML of the same records to N-Triples, on generated Harvest-like data
# (soif-gen), side by side in one run; then a check that both hold the same triples.
#
#   benches/rdf.sh                               # SIZE=200MB, RUNS=1
#   WORK=/tmp/rdfbench SIZE=20MB benches/rdf.sh  # a quick check
#
# Rows (wall seconds, mean of RUNS; input MB/s; peak RSS, the largest run):
#   soif convert x.soif --to ntriples -o soif.nt
#   rapper -i rdfxml -o ntriples x.rdf >rapper.nt      (x.rdf = soif convert x.soif --to rdfxml, untimed)
# The check: soif.nt re-serialised by rapper (so that both have rapper's escaping), blank
# node labels blanked, both sorted: the script stops if they differ. Installs rapper
# (raptor2-utils) with apt-get when missing. Uses target/release (or
# $CARGO_TARGET_DIR/release); builds it unless SKIP_BUILD=1. Figures: docs/performance.md.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PROFILE=${PROFILE:-release}
SOIF=$TARGET/$PROFILE/soif
GEN=$TARGET/$PROFILE/soif-gen
SIZE=${SIZE:-200MB}
RUNS=${RUNS:-1}
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/soif-rdfbench.XXXXXX")}
mkdir -p "$WORK"
cd "$ROOT"
[ "${SKIP_BUILD:-0}" = 1 ] || cargo build --release --locked --quiet -p soif --bin soif --bin soif-gen
command -v rapper >/dev/null || apt-get install -y --no-install-recommends raptor2-utils >/dev/null
. "$ROOT/benches/common.sh"

DATA=$WORK/bench-$SIZE.soif
[ -s "$DATA" ] || "$GEN" --size "$SIZE" -o "$DATA"
[ -s "$DATA.rdf" ] || "$SOIF" convert "$DATA" --to rdfxml -q -o "$DATA.rdf"
MBS=$(mb "$DATA")

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); cores: $(nproc); load average: $(cut -d' ' -f1-3 /proc/loadavg); runs: $RUNS; $(rapper --version | sed 's/^/rapper /')"
echo "input: $DATA, $MBS MB of SOIF, $(grep -c '^@' "$DATA") records; its RDF/XML $(mb "$DATA.rdf") MB"
printf '| %-52s | %8s | %8s | %12s |\n' command "mean s" "MB/s" "peak RSS MiB"
printf '|%s|%s|%s|%s|\n' ------------------------------------------------------ ---------- ---------- --------------
read -r S M < <(measure "$RUNS" "$SOIF" convert "$DATA" --to ntriples -q -o "$WORK/soif.nt")
printf '| %-52s | %8s | %8.1f | %12s |\n' "soif convert x.soif --to ntriples" "$S" "$(echo "$MBS / $S" | bc -l)" "$M"
read -r R RM < <(OUT=$WORK/rapper.nt measure "$RUNS" rapper -q -i rdfxml -o ntriples "$DATA.rdf")
printf '| %-52s | %8s | %8.1f | %12s |\n' "rapper -i rdfxml -o ntriples x.rdf (soif's RDF/XML)" "$R" "$(echo "$MBS / $R" | bc -l)" "$RM"
echo "speed-up: $(printf '%.1f' "$(echo "$R / $S" | bc -l)")×; N-Triples: soif $(mb "$WORK/soif.nt") MB, rapper $(mb "$WORK/rapper.nt") MB"

# The same triples: both in rapper's N-Triples, blank node labels blanked, sorted.
canon() { sed -E 's/_:[A-Za-z0-9]+/_:b/g' | LC_ALL=C sort -S 25% -T "$WORK"; }
rapper -q -i ntriples -o ntriples "$WORK/soif.nt" | canon >"$WORK/soif.sorted"
canon <"$WORK/rapper.nt" >"$WORK/rapper.sorted"
if cmp -s "$WORK/soif.sorted" "$WORK/rapper.sorted"; then
    echo "same triples: $(wc -l <"$WORK/soif.sorted") in each"
else
    echo "the triples differ:" >&2
    diff "$WORK/soif.sorted" "$WORK/rapper.sorted" | head -20 >&2
    exit 1
fi
rm -f "$WORK/soif.sorted" "$WORK/rapper.sorted"
