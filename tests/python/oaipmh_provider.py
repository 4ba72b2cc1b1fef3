"""A third-party OAI-PMH provider for soif's OAI-PMH source tests: the `oaipmh` package's
own server (PyPI, 4.x), over a JSON file of items that the tests change between harvests.

    python oaipmh_provider.py STORE.json LOG

serves http://127.0.0.1:PORT/oai (the port chosen by the system, printed as the first
line of stdout), re-reading STORE.json on every request, and appends each request's query
string to LOG, so that a test can count what a harvest asked for.

STORE.json: {"ID": {"datestamp": "YYYY-MM-DDThh:mm:ssZ", "deleted": false,
"dc": {"title": ["…"], "creator": ["…", "…"]}}, …}. Deleted items stay in the store
(deletedRecord: persistent). Lists come three items at a time (resumption tokens).
"""

import http.server
import json
import sys
import urllib.parse

from oaipmh import common, error, metadata, server
from oaipmh.datestamp import datestamp_to_datetime

PAGE = 3


class Repository:
    """oaipmh's IOAI interface over the store."""

    def __init__(self, store, base_url):
        self.store = store
        self.base_url = base_url

    def _items(self):
        with open(self.store, encoding="utf-8") as f:
            return json.load(f)

    def identify(self):
        return common.Identify(
            repositoryName="oaipmh test provider",
            baseURL=self.base_url,
            protocolVersion="2.0",
            adminEmails=["admin@example.org"],
            earliestDatestamp=datestamp_to_datetime("2000-01-01T00:00:00Z"),
            deletedRecord="persistent",
            granularity="YYYY-MM-DDThh:mm:ssZ",
            compression=["identity"],
        )

    def listMetadataFormats(self, identifier=None):
        return [
            ("oai_dc", "http://www.openarchives.org/OAI/2.0/oai_dc.xsd",
             "http://www.openarchives.org/OAI/2.0/oai_dc/"),
        ]

    def listSets(self):
        raise error.NoSetHierarchyError("no sets")

    def _record(self, ident, item):
        header = common.Header(None, ident, datestamp_to_datetime(item["datestamp"]), [], item["deleted"])
        meta = None if item["deleted"] else common.Metadata(None, item["dc"])
        return header, meta, None

    def _select(self, metadataPrefix, set=None, from_=None, until=None):
        if metadataPrefix != "oai_dc":
            raise error.CannotDisseminateFormatError(metadataPrefix)
        if set is not None:
            raise error.NoSetHierarchyError("no sets")
        out = []
        for ident, item in self._items().items():
            stamp = datestamp_to_datetime(item["datestamp"])
            if from_ is not None and stamp < from_:
                continue
            if until is not None and stamp > until:
                continue
            out.append((stamp, ident, item))
        out.sort(key=lambda t: (t[0], t[1]))
        return [self._record(ident, item) for _, ident, item in out]

    def listRecords(self, metadataPrefix, set=None, from_=None, until=None):
        return self._select(metadataPrefix, set, from_, until)

    def listIdentifiers(self, metadataPrefix, set=None, from_=None, until=None):
        return [h for h, _, _ in self._select(metadataPrefix, set, from_, until)]

    def getRecord(self, metadataPrefix, identifier):
        item = self._items().get(identifier)
        if item is None:
            raise error.IdDoesNotExistError(identifier)
        return self._record(identifier, item)


def main():
    store, log = sys.argv[1], sys.argv[2]
    registry = metadata.MetadataRegistry()
    registry.registerWriter("oai_dc", server.oai_dc_writer)
    holder = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            parsed = urllib.parse.urlsplit(self.path)
            with open(log, "a", encoding="utf-8") as f:
                f.write(parsed.query + "\n")
            if parsed.path != "/oai":
                self.send_error(404)
                return
            args = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
            body = holder["server"].handleRequest(args)
            self.send_response(200)
            self.send_header("Content-Type", "text/xml; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = httpd.server_address[1]
    repo = Repository(store, f"http://127.0.0.1:{port}/oai")
    holder["server"] = server.Server(repo, registry, resumption_batch_size=PAGE)
    print(port, flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
