# Shared by the benchmark scripts (`. "$ROOT/benches/common.sh"` after setting WORK).

# measure RUNS CMD...: runs CMD RUNS times (stdin from $IN when set, stdout to $OUT when
# set, else discarded) and prints "mean_s peak_rss_mib": the mean wall seconds and the
# largest peak RSS (/usr/bin/time %e %M). Stops the script, showing CMD's stderr, if CMD
# fails.
measure() {
    local runs=$1 total=0 peak=0 i out s m
    shift
    for i in $(seq "$runs"); do
        /usr/bin/time -o "$WORK/time.txt" -f '%e %M' "$@" <"${IN:-/dev/null}" >"${OUT:-/dev/null}" 2>"$WORK/stderr.txt" || {
            cat "$WORK/stderr.txt" >&2
            exit 1
        }
        out=$(tail -1 "$WORK/time.txt")
        s=${out% *}; m=${out#* }
        total=$(echo "$total + $s" | bc -l)
        [ "$m" -gt "$peak" ] && peak=$m
    done
    printf '%.3f %.1f\n' "$(echo "$total / $runs" | bc -l)" "$(echo "$peak / 1024" | bc -l)"
}

# mb FILE: its size in MB (10^6 bytes), one decimal.
mb() { echo "scale=1; $(stat -c %s "$1") / 1000000" | bc; }
