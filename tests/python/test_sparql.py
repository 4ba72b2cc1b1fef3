"""The `sparql` sink against a real SPARQL store: Oxigraph's server (the `oxigraph`
package, tests/python/requirements.txt), started on a loopback port chosen at run time.

A directory of Harvest dumps is mirrored into the store by three nightly runs
(`soif run PIPELINE.toml` with `[state]`) that bring additions, changes and `@DELETE`
envelopes; after each, the store's triples (queried with SPARQL) are the graph that
`soif convert --to ntriples` gives for the records as they now stand, compared by
rdflib's isomorphism, and every record is a named graph of its own. A third-party
OAI-PMH provider harvested into the store with `--state` stays in step the same way,
its deleted records' graphs dropped. A stub in front of
the store answers 503/429 with Retry-After first (the sink waits and sends again), and
a run killed with SIGKILL mid-way, then run again, leaves the store as a clean run does
with every record counted once."""

import http.server
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
import rdflib
import rdflib.compare
from conftest import ROOT
from conftest import soif_bin as given_soif_bin
from test_oai_source import change, next_second, provider, run2, run3  # noqa: F401 (a fixture)

NIGHTLY = ROOT / "examples" / "data" / "nightly"


def soif_bin():
    """The binary, as an absolute path: some runs happen in a temporary directory."""
    return given_soif_bin().resolve()


def oxigraph_bin():
    here = pathlib.Path(sys.executable).parent / "oxigraph"
    found = here if here.exists() else shutil.which("oxigraph")
    assert found, "the `oxigraph` server (pip install oxigraph, tests/python/requirements.txt)"
    return str(found)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Store:
    """An Oxigraph server on 127.0.0.1 (in memory), its SPARQL endpoints."""

    def __init__(self, tmp):
        for _ in range(5):
            port = free_port()
            self.base = f"http://127.0.0.1:{port}"
            self.proc = subprocess.Popen([oxigraph_bin(), "serve", "--bind", f"127.0.0.1:{port}"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if self.wait_ready():
                return
            self.proc.kill()
            self.proc.wait()
        raise AssertionError("oxigraph did not start")

    def wait_ready(self):
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False  # the port was taken meanwhile
            try:
                self.select("ASK { }")
                return True
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        return False

    @property
    def update_url(self):
        return self.base + "/update"

    @property
    def graph_store_url(self):
        """Oxigraph's Graph Store endpoint, loading a POST with its bulk loader."""
        return self.base + "/store?no_transaction"

    def query(self, q, accept):
        req = urllib.request.Request(self.base + "/query", data=q.encode(),
                                     headers={"Content-Type": "application/sparql-query",
                                              "Accept": accept})
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.read()

    def select(self, q):
        return json.loads(self.query(q, "application/sparql-results+json"))

    def update(self, u):
        req = urllib.request.Request(self.update_url, data=u.encode(),
                                     headers={"Content-Type": "application/sparql-update"})
        urllib.request.urlopen(req, timeout=60).read()

    def triples(self):
        """Every triple of every named graph, as an rdflib graph."""
        nt = self.query("CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }", "application/n-triples")
        return rdflib.Graph().parse(data=nt.decode(), format="nt")

    def graphs(self):
        rows = self.select("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")["results"]["bindings"]
        return {r["g"]["value"] for r in rows}

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path)
    yield s
    s.stop()


class Stub(http.server.ThreadingHTTPServer):
    """A proxy in front of the store (`target`, its base URL): answers the first requests
    with the faults given, one per request (a status code, sent with `Retry-After: 1`, or
    None to forward), then forwards to the same path; `delay` slows each forward. `paths`
    lists the paths of the requests received. A request whose body holds `refuse` is
    answered `400 Bad Request` (as a store refuses an update it cannot take)."""

    def __init__(self, target, faults=(), delay=0.0, refuse=None):
        self.target, self.faults, self.delay, self.refuse = target, list(faults), delay, refuse
        self.requests = 0
        self.paths = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), StubHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base(self):
        return "http://127.0.0.1:%d" % self.server_address[1]

    @property
    def url(self):
        return self.base + "/update"

    @property
    def graph_store_url(self):
        return self.base + "/store?no_transaction"


class StubHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.requests += 1
            self.server.paths.append(self.path)
            fault = self.server.faults.pop(0) if self.server.faults else None
        if self.server.refuse and self.server.refuse in body:
            reply = b"Parse error: refused by the stub"
            self.send_response(400)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)
            return
        if fault:
            self.send_response(fault)
            self.send_header("Retry-After", "1")
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"busy")
            return
        time.sleep(self.server.delay)
        req = urllib.request.Request(self.server.target + self.path, data=body,
                                     headers={"Content-Type": self.headers["Content-Type"]})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                status, reply = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, reply = e.code, e.read()
        self.send_response(status)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


def soif(*args, check=True, **kw):
    out = subprocess.run([str(soif_bin()), *map(str, args)], capture_output=True, **kw)
    if check:
        assert out.returncode == 0, out.stderr.decode()
    return out


def jsonl(path):
    """The records of one dump, as soif's JSON Lines objects."""
    out = soif("convert", path, "--lenient", "--to", "jsonl", "-q")
    return [json.loads(line) for line in out.stdout.splitlines()]


def graph_of(records, tmp):
    """The graph `soif convert --to ntriples` writes for these JSON Lines records."""
    now = tmp / "current.jsonl"
    now.write_text("".join(json.dumps(r) + "\n" for r in records))
    nt = soif("convert", now, "--to", "ntriples", "-q").stdout
    return rdflib.Graph().parse(data=nt.decode(), format="nt")


def source_graph(dumps, tmp):
    """What the mirror must hold after the dumps, in order: each URL's latest record
    (a deleted one gone), as `soif convert --to ntriples` writes them."""
    current = {}
    for d in dumps:
        for r in jsonl(d):
            if r.get("action") == "delete":
                current.pop(r["url"], None)
            else:
                current[r["url"]] = r
    return graph_of(current.values(), tmp), set(current)


def assert_holds(store, want, records):
    """The store holds the graph `want`, of that many records, each in a graph of its own."""
    got = store.triples()
    if not rdflib.compare.isomorphic(got, want):
        _, only_got, only_want = rdflib.compare.graph_diff(got, want)
        pytest.fail("store != source: %d triples only in the store, %d only in the source, e.g. %s / %s"
                    % (len(only_got), len(only_want), list(only_got)[:3], list(only_want)[:3]))
    assert len(got) > records > 0
    # One named graph per record.
    assert len(store.graphs()) == records


def assert_mirrors(store, dumps, tmp):
    want, urls = source_graph(dumps, tmp)
    assert_holds(store, want, len(urls))
    return len(urls)


def record(url, title, extra=b""):
    body = b"Title{%d}:\t%s\n" % (len(title), title) + extra
    return b"@FILE { %s\n%s}\n" % (url.encode(), body)


PIPELINE = """
[source]
inputs = ["dumps"]
lenient = true

[[sink]]
format = "sparql"
output = "{url}"
batch_size = {batch}
{graph_store}

[state]
path = "mirror.state"
settle = "0s"
report = "report.json"
"""


def pipeline(tmp, url, batch=100, graph_store=None):
    (tmp / "dumps").mkdir(exist_ok=True)
    store = f'graph_store = "{graph_store}"' if graph_store else ""
    (tmp / "pipeline.toml").write_text(
        PIPELINE.replace("{url}", url).replace("{batch}", str(batch)).replace("{graph_store}", store))


# The two ways a batch is sent: one SPARQL Update, or the drops as an update and the
# triples POSTed as N-Quads to the Graph Store endpoint.
MODES = ["update", "graph-store"]


def report(tmp):
    return json.loads((tmp / "report.json").read_text())


def run_out(tmp):
    """The last run's records stored (its summary's `out`)."""
    return report(tmp)["totals"]["records_out"]


@pytest.mark.parametrize("mode", MODES)
def test_three_nightly_runs_mirror_the_dumps(store, tmp_path, mode):
    pipeline(tmp_path, store.update_url,
             graph_store=store.graph_store_url if mode == "graph-store" else None)
    dumps = tmp_path / "dumps"
    # The dumps in the order the runs take them (a run reads a directory in name order).
    taken = []
    # Night 1: two real gatherer dumps and a file of our own with awkward values.
    for f in sorted(NIGHTLY.iterdir()):
        shutil.copy(f, dumps / f.name)
    odd = b"bytes \xff\xfe not UTF-8, <tags> & \"quotes\"\ttab\nnewline \\ backslash \x01"
    mine = [record(f"http://mirror.example/{i}", b"Record %d" % i,
                   b"Keywords{%d}:\t%s\n" % (len(odd), odd) if i % 3 == 0 else b"")
            for i in range(40)]
    (dumps / "a-mine.soif").write_bytes(b"".join(mine))
    taken += sorted(dumps.iterdir())
    soif("run", tmp_path / "pipeline.toml", "-q", cwd=tmp_path)
    first = assert_mirrors(store, taken, tmp_path)
    assert first > 40

    # Night 2: additions and changes (the same URLs with new values).
    changed = [record(f"http://mirror.example/{i}", b"Record %d, revised" % i) for i in range(0, 40, 4)]
    added = [record(f"http://mirror.example/new/{i}", b"New %d" % i) for i in range(15)]
    (dumps / "b-changes.soif").write_bytes(b"".join(changed + added))
    taken.append(dumps / "b-changes.soif")
    soif("run", tmp_path / "pipeline.toml", "-q", cwd=tmp_path)
    second = assert_mirrors(store, taken, tmp_path)
    assert second == first + 15
    assert run_out(tmp_path) == len(changed) + len(added)

    # Night 3: @DELETE envelopes (ours and records of a gatherer dump) and one more change.
    gatherer = [r for d in sorted(NIGHTLY.iterdir()) for r in jsonl(d) if r.get("action") != "delete"][:2]
    assert len({r["url"] for r in gatherer}) == 2
    gone = b"".join(b"@%s { %s\n}\n" % (r["template"].encode(), r["url"].encode()) for r in gatherer)
    gone += b"".join(b"@FILE { http://mirror.example/%d\n}\n" % i for i in range(1, 40, 5))
    (dumps / "c-deletions.soif").write_bytes(
        b"@DELETE {\n" + gone + b"}\n" + record("http://mirror.example/new/0", b"New 0, revised"))
    taken.append(dumps / "c-deletions.soif")
    soif("run", tmp_path / "pipeline.toml", "-q", cwd=tmp_path)
    third = assert_mirrors(store, taken, tmp_path)
    assert third == second - 2 - 8
    for r in gatherer:
        assert r["url"] not in store.graphs()


@pytest.mark.parametrize("mode", MODES)
def test_an_oai_pmh_harvest_keeps_the_store_in_step(store, provider, tmp_path, mode):
    """A third-party OAI-PMH provider (test_oai_source.py's) harvested into the store with
    `--state`, three runs: items added, changed and deleted (a header that says `deleted`)
    at the provider. After each run the store holds the triples of the provider's live
    records, as `soif convert --to ntriples` writes them from a full harvest, one graph
    each: a deleted record's graph is dropped."""
    src = f"{provider['url']}?metadataPrefix=oai_dc"
    mirror = ["convert", src, "--to", "sparql", "-o", store.update_url,
              "--state", tmp_path / "sparql.state", "-q"]
    if mode == "graph-store":
        mirror += ["--graph-store", store.graph_store_url]

    def in_step():
        full = [json.loads(line) for line in soif("convert", src, "--to", "jsonl", "-q").stdout.splitlines()]
        live = [r for r in full if r.get("action") != "delete"]
        assert_holds(store, graph_of(live, tmp_path), len(live))
        return len(live)

    next_second()
    soif(*mirror)
    assert in_step() == 10
    change(provider["store"], run2)  # two added, one changed, two deleted
    next_second()
    soif(*mirror)
    assert in_step() == 10
    change(provider["store"], run3)  # one deleted, one deleted earlier back
    next_second()
    soif(*mirror)
    assert in_step() == 10


def test_busy_answers_are_retried_after_retry_after(store, tmp_path):
    stub = Stub(store.base, faults=[503, 429])
    src = tmp_path / "in.soif"
    src.write_bytes(b"".join(record(f"http://busy.example/{i}", b"Busy %d" % i) for i in range(30)))
    started = time.time()
    out = soif("convert", src, "--to", "sparql", "-o", stub.url, "--batch-size", "10")
    err = out.stderr.decode()
    assert time.time() - started >= 2, "waited Retry-After: 1, twice"
    assert stub.requests == 3 + 2
    assert "HTTP 503 Service Unavailable: busy; sending the batch of 10 records again in 1.0 s (retry 1 of 6)" in err
    assert "HTTP 429 Too Many Requests: busy" in err
    assert "30 records in, 30 out" in err
    assert_mirrors(store, [src], tmp_path)
    stub.shutdown()


def test_a_graph_store_load_retried_drops_its_graphs_again(store, tmp_path):
    # The first batch's load is answered 503: its drops and its load are sent again.
    stub = Stub(store.base, faults=[None, 503])
    src = tmp_path / "in.soif"
    src.write_bytes(b"".join(record(f"http://busy.example/{i}", b"Busy %d" % i) for i in range(30)))
    out = soif("convert", src, "--to", "sparql", "-o", stub.url, "--graph-store", stub.graph_store_url,
               "--batch-size", "10")
    err = out.stderr.decode()
    assert "/store?no_transaction: HTTP 503 Service Unavailable: busy; sending the batch of 10 " \
        "records again in 1.0 s (retry 1 of 6)" in err, err
    assert [p.split("?")[0] for p in stub.paths] == ["/update", "/store"] * 4
    assert "30 records in, 30 out" in err
    assert_mirrors(store, [src], tmp_path)
    stub.shutdown()


def test_a_refusing_endpoint_stops_the_run_and_counts_only_what_was_stored(store, tmp_path):
    # The first request goes through, the second is refused with a 401: no request to
    # this endpoint can succeed, so the run stops.
    stub = Stub(store.base, faults=[None, 401])
    src = tmp_path / "in.soif"
    src.write_bytes(b"".join(record(f"http://refused.example/{i}", b"R %d" % i) for i in range(25)))
    out = soif("convert", src, "--to", "sparql", "-o", stub.url, "--batch-size", "10", check=False)
    err = out.stderr.decode()
    assert out.returncode == 1, err
    assert "HTTP 401 Unauthorized: busy" in err and "10 records stored before this" in err, err
    assert "25 records in, 10 out" in err, err
    assert len(store.graphs()) == 10
    assert stub.requests == 2
    stub.shutdown()


@pytest.mark.parametrize("mode", MODES)
def test_a_refused_record_is_found_rejected_and_the_rest_stored(store, tmp_path, mode):
    # The store refuses (400) any request that holds record 7: its batch of 10 is split
    # in halves, then halves of those, until record 7 is alone; it is quarantined with
    # the store's reason, and every other record is stored.
    stub = Stub(store.base, refuse=b"<http://refused.example/7>")
    records = [record(f"http://refused.example/{i}", b"R %d" % i) for i in range(25)]
    src = tmp_path / "in.soif"
    src.write_bytes(b"".join(records))
    store_args = ["--graph-store", stub.graph_store_url] if mode == "graph-store" else []
    out = soif("convert", src, "--to", "sparql", "-o", stub.url, *store_args, "--batch-size", "10",
               "--quarantine", tmp_path / "refused.soif", check=False)
    err = out.stderr.decode()
    assert out.returncode == 3, err
    assert "25 records in, 24 out, 1 rejected" in err, err
    assert ("sparql output refused the record: the endpoint refused it: " in err
            and "HTTP 400 Bad Request: Parse error: refused by the stub" in err
            and "(http://refused.example/7)" in err), err
    assert (tmp_path / "refused.soif").read_bytes() == records[7]
    kept = tmp_path / "kept.soif"
    kept.write_bytes(b"".join(records[:7] + records[8:]))
    assert_mirrors(store, [kept], tmp_path)
    # Without --on-error, the refused record stops the run (after its batch is sent).
    out = soif("convert", src, "--to", "sparql", "-o", stub.url, *store_args, "--batch-size", "10",
               check=False)
    assert out.returncode != 0
    assert "HTTP 400 Bad Request: Parse error: refused by the stub" in out.stderr.decode()
    stub.shutdown()


@pytest.mark.parametrize("mode", MODES)
def test_killed_mid_run_then_run_again_stores_each_record_once(store, tmp_path, mode):
    # A slow store (each batch of 20 delayed), so that the run can be killed mid-way.
    stub = Stub(store.base, delay=0.05)
    pipeline(tmp_path, stub.url, batch=20,
             graph_store=stub.graph_store_url if mode == "graph-store" else None)
    gen = soif_bin().with_name("soif-gen")
    soif_gen = subprocess.run([str(gen), "--size", "2MB", "--summaries-only", "--seed", "7",
                               "-o", tmp_path / "dumps" / "big.soif"], capture_output=True)
    assert soif_gen.returncode == 0, soif_gen.stderr
    records = jsonl(tmp_path / "dumps" / "big.soif")
    total, urls = len(records), len({r["url"] for r in records})
    assert urls > 500
    child = subprocess.Popen([str(soif_bin()), "run", "pipeline.toml", "-q"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while len(store.graphs()) < urls // 4:
        assert child.poll() is None, "the run ended before it could be killed"
        assert time.time() < deadline
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    partial = len(store.graphs())
    assert 0 < partial < urls
    # Run again: the state took nothing from the killed run, so all is sent again.
    out = soif("run", "pipeline.toml", cwd=tmp_path)
    assert "was killed before its outputs were committed" in out.stderr.decode()
    assert run_out(tmp_path) == total
    assert assert_mirrors(store, [tmp_path / "dumps" / "big.soif"], tmp_path) == urls
    # And a third run has nothing new to take.
    soif("run", "pipeline.toml", cwd=tmp_path)
    assert run_out(tmp_path) == 0
    stub.shutdown()
