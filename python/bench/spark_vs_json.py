"""Spark: ``spark.read.format("soif")`` → Parquet against Spark's own JSON reader on the
same records as JSON Lines (``spark.read.schema(...).json``) → Parquet, in one run.

    python python/bench/spark_vs_json.py --data /work/data-spark --jar "$(spark/build.sh)"   # 1 GB
    python python/bench/spark_vs_json.py --data /work/data-spark            # the Python data source only
    python python/bench/spark_vs_json.py --data /tmp/sb --plain 2 --gz 1 --file-size 100MB --keep

Generates the archive with ``soif-gen`` (``--plain`` plain files and ``--gz`` gzip'd ones,
``--file-size`` of SOIF each; default 4 + 2 files of about 170 MB, 1 GB in all;
``--summaries-only`` for records of ~1.2 KB without ``Full-Text``) and the
same records as JSON Lines with ``soif convert --to jsonl`` (the gzip'd files' JSON gzip'd
too, so both readers get one unsplittable partition for them). Then, each in a fresh
Spark process (the JVM's start-up is not timed; the read and the Parquet write are):

1. ``soif`` → Parquet on ``local[2]`` and ``local[1]``, and on ``local[2]`` with a
   32 MiB ``splitSize``. With ``--jar`` (soif's JVM data source, which ``spark.jars``
   puts on Spark's classpath, where it takes the format name ``soif``), ``soif`` is the JVM
   reader, and the Python data source is timed too, on ``local[2]`` and ``local[1]``;
2. JSON (``spark.read.schema("template STRING, url STRING, action STRING, attributes
   MAP<STRING, STRING>").json``) → Parquet on ``local[2]`` and ``local[1]``;
3. ``soif`` → Parquet on ``local[2]`` over a quarter of the archive (one plain file and
   one gzip'd), and over the whole archive with a 512 MiB driver heap instead of Spark's
   default 1 GiB, for memory against size;
4. the reads alone (Spark's ``noop`` sink): ``soif`` on ``local[2]`` and ``local[1]``,
   JSON on ``local[2]``;
5. two ceilings for any reader, on ``local[2]`` and ``local[1]``: Spark's own vectorized
   Parquet reader over the same records as uncompressed Parquet in soif's layout (``soif
   convert --to parquet --compression none``: columns ready in memory, nothing to parse or
   inflate) → Parquet, and a DataFrame cached in memory (``persist(MEMORY_ONLY)``, ten
   partitions, materialized before the warm-up; a 6 GiB driver heap holds it) → Parquet: a
   reader that costs nothing, which leaves Spark's Parquet writer alone.

Each timed job follows a warm-up job on a ``--warm-size`` file (32 MB) of the same
kind in the same session (the JIT compiles the hot code, the Python workers and the
planner's Python process start, once per session). The four headline jobs (soif and JSON
on ``local[2]`` and ``local[1]``) run ``--repeat`` times (3), each in a fresh process, and
the run of median wall time is kept. Each line gives
the wall time, the records written, the CPU time of the JVM and of the Python workers
during the job (from /proc, exited workers included) and, of the JVM's, the share of its
JIT compiler threads, and the peak resident memory of the
JVM (driver and executor in local mode) and of the Python workers (the largest one, and
all of them at once), sampled from /proc every 0.2 s. Finally the ratios and the skew of
the planned partitions' sizes. soif and soif-gen come from ``$CARGO_TARGET_DIR/release``
(or ``target/release``), ``--bin`` to override.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JSON_SCHEMA = "template STRING, url STRING, action STRING, attributes MAP<STRING, STRING>"


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def read_stat(path: str) -> Any:
    """A /proc stat file's command name and the fields after it; None when it is gone."""
    try:
        with open(path) as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.index("(") + 1 : stat.rindex(")")], stat.rsplit(")", 1)[1].split()


def descendants(parent: dict) -> set:
    """The processes below this one, given each process's parent (pid -> ppid)."""
    me = os.getpid()
    below, changed = {me}, True
    while changed:
        changed = False
        for pid, ppid in parent.items():
            if ppid in below and pid not in below:
                below.add(pid)
                changed = True
    return below - {me}


def children() -> dict:
    """pid -> (ppid, cmdline) of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        stat = read_stat(f"/proc/{d}/stat")
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if stat is not None:
            out[int(d)] = (int(stat[1][1]), cmd)
    return out


def cpu_seconds() -> dict:
    """CPU time (user + system, with that of exited children) of the JVM and of the
    Python workers below this process, in seconds."""
    ticks = os.sysconf("SC_CLK_TCK")
    procs = {}
    for d in os.listdir("/proc"):
        stat = read_stat(f"/proc/{d}/stat") if d.isdigit() else None
        if stat is not None:
            comm, fields = stat
            procs[int(d)] = (int(fields[1]), comm, sum(int(x) for x in fields[11:15]))
    out = {"jvm": 0.0, "python": 0.0, "jit": 0.0}
    for pid in descendants({pid: p[0] for pid, p in procs.items()}):
        _, comm, t = procs[pid]
        out["jvm" if "java" in comm else "python"] += t / ticks
        if "java" in comm:
            out["jit"] += jit_seconds(pid, ticks)
    return out


def jit_seconds(pid: int, ticks: int) -> float:
    """CPU time of a JVM's live JIT compiler threads ("C1/C2 CompilerThread")."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    total = 0
    for tid in tids:
        stat = read_stat(f"/proc/{pid}/task/{tid}/stat")
        if stat is not None and "CompilerThre" in stat[0]:
            total += sum(int(x) for x in stat[1][11:13])
    return total / ticks


class Sampler(threading.Thread):
    """Peak RSS of the JVM and of the Python workers below this process."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.jvm = self.worker = self.workers = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            procs = children()
            total = 0
            for pid in descendants({pid: p[0] for pid, p in procs.items()}):
                cmd = procs[pid][1]
                r = rss_kib(pid)
                if "java" in cmd.split(" ")[0]:
                    self.jvm = max(self.jvm, r)
                elif "python" in cmd:
                    self.worker = max(self.worker, r)
                    total += r
            self.workers = max(self.workers, total)
            self.stop.wait(0.2)


def one(args: argparse.Namespace) -> None:
    """One measured run (in its own process): prints a JSON line."""
    from pyspark import StorageLevel
    from pyspark.sql import SparkSession

    import soif.spark

    spark = (
        SparkSession.builder.master(args.master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", args.driver_memory or ("6g" if args.what == "cached" else "1g"))
        .config("spark.jars", args.jar or "")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    soif.spark.register(spark)
    sampler = Sampler()
    sampler.start()
    out = os.path.join(args.data, "out.parquet")

    cached = None
    if args.what == "cached":
        cached = spark.read.parquet(*args.paths).repartition(10).persist(StorageLevel.MEMORY_ONLY)
        cached.count()

    def job(paths: list) -> Any:
        shutil.rmtree(out, ignore_errors=True)
        if cached is not None and paths == args.paths:
            df = cached
        elif args.what in ("parquet", "cached"):
            df = spark.read.parquet(*paths)
        elif args.what == "soif":
            # With --jar on Spark's classpath, "soif" is soif's JVM data source.
            df = spark.read.format("soif").option("mode", "FAILFAST")
            for kv in args.option or []:
                df = df.option(*kv.split("=", 1))
            if args.split_size:
                df = df.option("splitSize", args.split_size)
            df = df.load(paths)
        else:
            df = spark.read.schema(JSON_SCHEMA).option("mode", "FAILFAST").json(paths)
        if args.sink == "noop":
            df.write.format("noop").mode("overwrite").save()
        else:
            df.write.parquet(out)
        return df

    # A warm-up job on a smaller file first (the JIT compiles the hot code, Spark's Python
    # workers and the planner's Python process start, once per session: a cost of seconds
    # that a long job pays once): the timed job is the steady state of a session. The JIT
    # still compiles during it (its CPU is reported).
    warm = {"soif": "warm.soif", "json": "warm.jsonl"}.get(args.what, "warm.parquet")
    job([os.path.join(args.data, f"warm-{args.warm_size}", warm)])
    c0 = cpu_seconds()
    t0 = time.perf_counter()
    df = job(args.paths)
    wall = time.perf_counter() - t0
    c1 = cpu_seconds()
    sampler.stop.set()
    sampler.join()
    rows = spark.read.parquet(out).count() if args.sink == "parquet" else df.count()
    parts = df.rdd.getNumPartitions()
    spark.stop()
    shutil.rmtree(out, ignore_errors=True)
    print(
        json.dumps(
            dict(
                wall=wall,
                rows=rows,
                partitions=parts,
                jvm=sampler.jvm,
                worker=sampler.worker,
                workers=sampler.workers,
                cpu_jvm=c1["jvm"] - c0["jvm"],
                cpu_python=c1["python"] - c0["python"],
                cpu_jit=c1["jit"] - c0["jit"],
            )
        )
    )


def run(
    label: str,
    what: str,
    master: str,
    paths: list,
    args: argparse.Namespace,
    split_size: str = "",
    sink: str = "parquet",
    driver_memory: str = "",
    jar: bool = False,
    repeat: int = 1,
) -> dict:
    """Runs a job `repeat` times, each in a fresh Spark process; the run of median wall time."""
    runs = sorted(
        (run_once(label, what, master, paths, args, split_size, sink, driver_memory, jar) for _ in range(repeat)),
        key=lambda r: r["wall"],
    )
    if repeat > 1:
        print(f"{'':<42} median of {repeat}: {runs[len(runs) // 2]['wall']:6.2f} s", flush=True)
    return runs[len(runs) // 2]


def run_once(
    label: str,
    what: str,
    master: str,
    paths: list,
    args: argparse.Namespace,
    split_size: str,
    sink: str,
    driver_memory: str,
    jar: bool,
) -> dict:
    cmd = [sys.executable, __file__, "--one", what, "--master", master, "--data", args.data, "--sink", sink]
    cmd += ["--warm-size", args.warm_size]
    if jar:
        cmd += ["--jar", args.jar]
    for kv in args.option or []:
        cmd += ["--option", kv]
    if driver_memory:
        cmd += ["--driver-memory", driver_memory]
    if split_size:
        cmd += ["--split-size", split_size]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    done = subprocess.run(cmd + ["--"] + paths, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{label} failed:\n{done.stderr[-3000:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"{label:<42} {r['wall']:6.2f} s  {r['rows']:>7} rows  {r['partitions']:>3} parts  "
        f"CPU JVM {r['cpu_jvm']:5.1f} s (JIT {r['cpu_jit']:3.1f}) + Python {r['cpu_python']:4.1f} s "
        f"({(r['cpu_jvm'] + r['cpu_python']) / r['wall']:.2f} cores)  "
        f"RSS JVM {r['jvm'] / 1024:5.0f} MiB, worker {r['worker'] / 1024:4.0f} MiB, "
        f"workers {r['workers'] / 1024:4.0f} MiB",
        flush=True,
    )
    return r


def binary(args: argparse.Namespace, name: str) -> str:
    d = args.bin or os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release")
    p = os.path.join(d, name)
    if not os.access(p, os.X_OK):
        sys.exit(f"{p} is missing: cargo build --release --bins (or --bin DIR)")
    return p


def generate(args: argparse.Namespace) -> tuple:
    gen, soif_cli = binary(args, "soif-gen"), binary(args, "soif")
    sdir, jdir = os.path.join(args.data, "soif"), os.path.join(args.data, "jsonl")
    os.makedirs(sdir, exist_ok=True)
    os.makedirs(jdir, exist_ok=True)
    soif_files, json_files, parquet_files = [], [], []
    pdir = os.path.join(args.data, "parquet")
    os.makedirs(pdir, exist_ok=True)
    extra = ["--summaries-only"] if args.summaries_only else []
    warm = os.path.join(args.data, f"warm-{args.warm_size}")
    os.makedirs(warm, exist_ok=True)
    if not os.path.exists(os.path.join(warm, "warm.jsonl")):
        subprocess.run(
            [gen, "--size", args.warm_size, "--seed", "99", *extra, "-o", os.path.join(warm, "warm.soif")], check=True
        )
        subprocess.run(
            [soif_cli, "convert", os.path.join(warm, "warm.soif"), "--to", "jsonl", "-q", "-o", os.path.join(warm, "warm.jsonl")],
            check=True,
        )
        subprocess.run(
            [soif_cli, "convert", os.path.join(warm, "warm.soif"), "--to", "parquet", "-q", "-o", os.path.join(warm, "warm.parquet")],
            check=True,
        )
    for i in range(args.plain + args.gz):
        gz = i >= args.plain
        name = f"dump-{i}.soif"
        raw = os.path.join(sdir, name)
        jsonl = os.path.join(jdir, f"dump-{i}.jsonl")
        target = raw + ".gz" if gz else raw
        jtarget = jsonl + ".gz" if gz else jsonl
        if not os.path.exists(target):
            subprocess.run([gen, "--size", args.file_size, "--seed", str(i + 1), *extra, "-o", raw], check=True)
        if not os.path.exists(jtarget):
            subprocess.run([soif_cli, "convert", raw, "--to", "jsonl", "-q", "-o", jsonl], check=True)
        parquet = os.path.join(pdir, f"dump-{i}.parquet")
        if not os.path.exists(parquet):
            source = raw if os.path.exists(raw) else target
            subprocess.run(
                [soif_cli, "convert", source, "--to", "parquet", "--compression", "none", "-q", "-o", parquet], check=True
            )
        for f in ([raw, jsonl] if gz else []):
            if not os.path.exists(f + ".gz"):
                subprocess.run(["gzip", "-6", f], check=True)
        soif_files.append(target)
        json_files.append(jtarget)
        parquet_files.append(parquet)
    return soif_files, json_files, parquet_files


def _copy_job(start: float) -> float:
    import numpy as np

    a = np.ones(64 << 20, dtype=np.uint8)
    b = np.empty_like(a)
    np.copyto(b, a)
    while time.time() < start:  # both processes copy at the same time
        time.sleep(0.001)
    t = time.perf_counter()
    for _ in range(40):
        np.copyto(b, a)
    return time.perf_counter() - t


def memory_scaling() -> float:
    """How much faster two processes copy memory than one (2.56 GiB each, 64 MiB at a
    time): the ceiling of the 2-core speed-up for work that moves bytes, as turning Arrow
    batches into rows and encoding Parquet do."""
    from multiprocessing import get_context

    one = _copy_job(0.0)
    with get_context("spawn").Pool(2) as pool:
        start = time.time() + 3.0
        two = max(pool.map(_copy_job, [start, start]))
    return 2 * one / two


def size(paths: list) -> str:
    return f"{sum(os.path.getsize(p) for p in paths) / 1e6:.0f} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="/work/data-spark", help="where the archive is generated")
    ap.add_argument("--plain", type=int, default=4, help="plain SOIF files")
    ap.add_argument("--gz", type=int, default=2, help="gzip'd SOIF files")
    ap.add_argument("--file-size", default="170MB", help="SOIF bytes per file (soif-gen --size)")
    ap.add_argument("--summaries-only", action="store_true", help="soif-gen --summaries-only: ~1.2 KB records")
    ap.add_argument("--keep", action="store_true", help="keep the generated data")
    ap.add_argument("--bin", help="the directory of soif and soif-gen")
    ap.add_argument("--jar", help="soif's JVM data source (spark/build.sh): time soif with it, and without")
    ap.add_argument("--option", action="append", help="KEY=VALUE: an option of soif's reader (repeatable)")
    ap.add_argument("--warm-size", default="32MB", help="the warm-up job's file (soif-gen --size)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of the four headline jobs (the median is kept)")
    ap.add_argument("--one", choices=["soif", "json", "parquet", "cached"], help=argparse.SUPPRESS)
    ap.add_argument("--master", default="local[2]", help=argparse.SUPPRESS)
    ap.add_argument("--split-size", default="", help=argparse.SUPPRESS)
    ap.add_argument("--sink", default="parquet", choices=["parquet", "noop"], help=argparse.SUPPRESS)
    ap.add_argument("--driver-memory", default="", help=argparse.SUPPRESS)
    ap.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        args.what = args.one
        one(args)
        return

    os.makedirs(args.data, exist_ok=True)
    try:
        soif_files, json_files, parquet_files = generate(args)
        raw = args.plain + args.gz
        print(
            f"archive: {raw} files ({args.plain} plain, {args.gz} gzip'd), {args.file_size} of SOIF each"
            f"{' (summaries only)' if args.summaries_only else ''}; "
            f"stored {size(soif_files)} SOIF, {size(json_files)} JSON Lines; cores: {os.cpu_count()}; "
            f"load average before: {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        import soif.spark

        parts = soif.spark.plan_partitions(soif_files)
        sizes = [
            (p.split.end - p.split.start) if p.split is not None else os.path.getsize(p.path) for p in parts
        ]
        print(
            f"partitions (default splitSize 128 MiB, equal ranges per file): {len(parts)}; stored bytes min {min(sizes) / 1e6:.0f} MB, "
            f"median {statistics.median(sizes) / 1e6:.0f} MB, max {max(sizes) / 1e6:.0f} MB "
            f"(gzip'd files whole: {args.gz})"
        )
        small = [soif_files[0], soif_files[-1]] if args.gz else soif_files[:1]
        jvm = bool(args.jar)
        name = "soif (JVM)" if jvm else "soif"
        n = args.repeat
        s2 = run(f"{name} -> parquet, local[2]", "soif", "local[2]", soif_files, args, jar=jvm, repeat=n)
        j2 = run("json -> parquet, local[2]", "json", "local[2]", json_files, args, repeat=n)
        s1 = run(f"{name} -> parquet, local[1]", "soif", "local[1]", soif_files, args, jar=jvm, repeat=n)
        j1 = run("json -> parquet, local[1]", "json", "local[1]", json_files, args, repeat=n)
        py2 = py1 = None
        if jvm:
            py2 = run("soif (Python) -> parquet, local[2]", "soif", "local[2]", soif_files, args)
            py1 = run("soif (Python) -> parquet, local[1]", "soif", "local[1]", soif_files, args)
        s32 = run(f"{name} -> parquet, local[2], splitSize 32MiB", "soif", "local[2]", soif_files, args, "32MiB", jar=jvm)
        sq = run(f"{name} -> parquet, local[2], {size(small)} subset", "soif", "local[2]", small, args, jar=jvm)
        sm = run(
            f"{name} -> parquet, local[2], 512 MiB driver heap",
            "soif",
            "local[2]",
            soif_files,
            args,
            driver_memory="512m",
            jar=jvm,
        )
        sn = run(f"{name} -> noop (read only), local[2]", "soif", "local[2]", soif_files, args, sink="noop", jar=jvm)
        jn = run("json -> noop (read only), local[2]", "json", "local[2]", json_files, args, sink="noop")
        sn1 = run(f"{name} -> noop (read only), local[1]", "soif", "local[1]", soif_files, args, sink="noop", jar=jvm)
        p2 = run("Spark's Parquet reader -> parquet, local[2]", "parquet", "local[2]", parquet_files, args)
        p1 = run("Spark's Parquet reader -> parquet, local[1]", "parquet", "local[1]", parquet_files, args)
        c2 = run("cached in memory -> parquet, local[2]", "cached", "local[2]", parquet_files, args)
        c1 = run("cached in memory -> parquet, local[1]", "cached", "local[1]", parquet_files, args)
        rows = {r["rows"] for r in (s2, j2, s1, j1, s32, sm, p2, c2, *([py2, py1] if jvm else []))}
        assert len(rows) == 1, rows
        print(f"{name} vs JSON (local[2]): {j2['wall'] / s2['wall']:.2f}x faster")
        if py2 is not None and py1 is not None:
            print(
                f"soif (Python) vs JSON (local[2]): {j2['wall'] / py2['wall']:.2f}x; "
                f"local[2] vs local[1] {py1['wall'] / py2['wall']:.2f}x"
            )
        print(
            f"local[2] vs local[1]: {name} {s1['wall'] / s2['wall']:.2f}x, "
            f"Spark's JSON path {j1['wall'] / j2['wall']:.2f}x"
        )
        print(
            f"ceilings: Spark's own Parquet reader {j2['wall'] / p2['wall']:.2f}x JSON (local[2] vs local[1] "
            f"{p1['wall'] / p2['wall']:.2f}x); a reader that costs nothing (cached) {j2['wall'] / c2['wall']:.2f}x JSON "
            f"(local[2] vs local[1] {c1['wall'] / c2['wall']:.2f}x)"
        )
        print(f"read only: {name} vs JSON {jn['wall'] / sn['wall']:.2f}x; local[2] vs local[1] {sn1['wall'] / sn['wall']:.2f}x")
        busy = (s1["cpu_jvm"] + s1["cpu_python"]) / s1["wall"]
        print(
            f"local[1] keeps {busy:.2f} of the {os.cpu_count()} cores busy ({s1['cpu_jit']:.1f} s of it the JIT "
            f"compiler's): local[2] can be at most {os.cpu_count() / busy:.2f}x local[1] on this machine"
        )
        print(
            f"Parquet write alone (JVM CPU, parquet minus noop): {name} {s2['cpu_jvm'] - sn['cpu_jvm']:.1f} s, "
            f"JSON {j2['cpu_jvm'] - jn['cpu_jvm']:.1f} s"
        )
        print(
            f"memory, {size(small)} -> {size(soif_files)}: JVM {sq['jvm'] / 1024:.0f} -> {s2['jvm'] / 1024:.0f} MiB, "
            f"largest worker {sq['worker'] / 1024:.0f} -> {s2['worker'] / 1024:.0f} MiB"
        )
        print(
            f"memory copy, two processes against one: {memory_scaling():.2f}x the work per second "
            "(the machine's ceiling for a 2-core speed-up of work that moves bytes)"
        )
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    finally:
        if not args.keep:
            shutil.rmtree(args.data, ignore_errors=True)


if __name__ == "__main__":
    main()
