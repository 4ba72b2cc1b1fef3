"""pyarrow.table(soif.read(SOIF, ...)) with and without the extra columns
(`on_error="column"`'s `_corrupt_record`, `source_column=True`'s `_source`).

    soif-gen --size 200MB -o h.soif
    python python/bench/read_extras.py h.soif [runs]

Prints, for each set of options, the best of `runs` (default 5) wall-clock times in this
process (with the CPU time of all threads in that run) and the first run's time. Each set
runs in a fresh process, so that one does not inherit the memory another's batches left
to reuse. The extra columns should cost little: a mapped file is read the fast way with
them too (docs/performance.md, "How the Python reader spends its time").
"""

import json
import os
import resource
import subprocess
import sys
import time

OPTIONS = [{}, {"on_error": "column"}, {"source_column": True}, {"on_error": "column", "source_column": True}]


def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def one(path, runs, options):
    import pyarrow as pa

    import soif

    times = []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), cpu()
        rows = pa.table(soif.read(path, **options)).num_rows
        times.append((time.perf_counter() - t0, cpu() - c0))
    (wall, cpu_s), first = min(times), times[0][0]
    print(f"{json.dumps(options):48s} {rows:>9} rows  {wall:7.3f} s  (CPU {cpu_s:.3f} s)  first run {first:.3f} s")


def main():
    if len(sys.argv) > 3 and sys.argv[1] == "--one":
        one(sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4]))
        return
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    print(f"{path}: best of {runs}; load average {os.getloadavg()[0]:.2f}")
    for options in OPTIONS:
        subprocess.run([sys.executable, __file__, "--one", path, str(runs), json.dumps(options)], check=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
