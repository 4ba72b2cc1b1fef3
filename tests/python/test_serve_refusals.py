"""`soif serve` refuses a submission before reading its body (a wrong token, a body over
`--max-body`), and a client that sends its whole body before reading, as `urllib` does,
still gets the status and its reason instead of a broken pipe: the server reads and
discards what follows its reply (within a bound) before it closes."""

import urllib.error
import urllib.request

import pytest

from conftest import serve

TOKEN = "s3cret-token"
# Larger than what the two sockets' buffers hold on loopback.
BODY = 6 << 20


@pytest.fixture(scope="module")
def rdm(tmp_path_factory):
    db = tmp_path_factory.mktemp("refusals") / "books.db"
    yield from serve("--db", db, "--token", TOKEN, "--max-body", "64KiB")


def submission(size):
    value = b"x" * size
    return (b"@RDMHEADER { -\nRDM-Version{3}:\t1.0\nRDM-Type{11}:\trd-response\n}\n"
            b"@DOCUMENT { http://example.org/big\nBody{%d}:\t%s\n}\n" % (len(value), value))


def refusal(url, token):
    request = urllib.request.Request(url + "/rdm/incoming", data=submission(BODY), method="POST",
                                     headers={"Content-Type": "application/x-rdm",
                                              "Authorization": f"Bearer {token}"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(request, timeout=30)
    return e.value.code, e.value.read().decode("latin-1")


def test_a_wrong_token_is_told_to_a_client_that_sends_first(rdm):
    code, text = refusal(rdm, "not-the-token")
    assert code == 401
    assert "RDM-Error-Message{11}:\twrong token" in text


def test_a_body_over_the_limit_is_told_to_a_client_that_sends_first(rdm):
    code, text = refusal(rdm, TOKEN)
    assert code == 413
    assert "the request body is larger than 65536 bytes" in text
