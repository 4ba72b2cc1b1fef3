"""pyarrow.table(soif.read(SOIF)) against pyarrow.json.read_json(JSONL) of the same records.

    soif-gen --size 200MB -o h.soif && soif convert h.soif --to jsonl -o h.jsonl
    python python/bench/read_vs_json.py h.soif h.jsonl [runs]

Prints the best of `runs` (default 3) wall-clock times of each (with the CPU time of
all threads in that run) and the ratios; both sides
run in this process, one after the other, with pyarrow's default thread pool.
"""

import resource
import sys
import time

import pyarrow as pa
import pyarrow.json as pj

import soif


def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def best(f, runs):
    """The best wall-clock time of `runs`, with the CPU time (all threads) of that run."""
    times = []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), cpu()
        rows = f()
        times.append((time.perf_counter() - t0, cpu() - c0))
    return min(times), rows


def main():
    soif_path, jsonl_path = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    t_soif, n_soif = best(lambda: pa.table(soif.read(soif_path)).num_rows, runs)
    t_json, n_json = best(lambda: pj.read_json(jsonl_path).num_rows, runs)
    assert n_soif == n_json, (n_soif, n_json)
    print(f"records: {n_soif}; cpus for pyarrow: {pa.cpu_count()}")
    print(f"pyarrow.table(soif.read(...))  {t_soif[0]:7.2f} s  (CPU {t_soif[1]:.2f} s)")
    print(f"pyarrow.json.read_json(...)    {t_json[0]:7.2f} s  (CPU {t_json[1]:.2f} s)")
    print(f"soif is {t_json[0] / t_soif[0]:.1f}x faster ({t_json[1] / t_soif[1]:.1f}x less CPU)")


if __name__ == "__main__":
    main()
