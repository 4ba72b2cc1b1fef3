"""pyarrow.table(soif.read(SOIF)) against pyarrow.json.read_json(JSONL) of the same records.

    soif-gen --size 200MB -o h.soif && soif convert h.soif --to jsonl -o h.jsonl
    python python/bench/read_vs_json.py h.soif h.jsonl [runs]

Prints the best of `runs` (default 3) wall-clock times of each (with the CPU time of
all threads in that run), the first run's time, and the ratios; both sides
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
    """The best wall-clock time of `runs`, with the CPU time (all threads) of that run,
    and the first run's wall-clock time (memory not yet reused by either allocator)."""
    times = []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), cpu()
        rows = f()
        times.append((time.perf_counter() - t0, cpu() - c0))
    return min(times), times[0][0], rows


def main():
    soif_path, jsonl_path = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    t_soif, first_soif, n_soif = best(lambda: pa.table(soif.read(soif_path)).num_rows, runs)
    t_json, first_json, n_json = best(lambda: pj.read_json(jsonl_path).num_rows, runs)
    assert n_soif == n_json, (n_soif, n_json)
    print(f"records: {n_soif}; cpus for pyarrow: {pa.cpu_count()}; best of {runs}")
    print(
        f"pyarrow.table(soif.read(...))  {t_soif[0]:7.3f} s  (CPU {t_soif[1]:.3f} s)"
        f"  first run {first_soif:.3f} s"
    )
    print(
        f"pyarrow.json.read_json(...)    {t_json[0]:7.3f} s  (CPU {t_json[1]:.3f} s)"
        f"  first run {first_json:.3f} s"
    )
    print(
        f"soif is {t_json[0] / t_soif[0]:.2f}x faster ({t_json[1] / t_soif[1]:.2f}x less CPU);"
        f" first runs {first_json / first_soif:.2f}x"
    )


if __name__ == "__main__":
    main()
