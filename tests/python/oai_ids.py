"""The provider's identifiers (codecs/src/oai/ids.rs), rebuilt from a catalog's rows."""

_ID_MARKS = b"-_.!~*'();/?:@&=+$,"


def _escape(data, keep):
    return "".join(chr(b) if keep(b) else "%%%02X" % b for b in data)


def identifier(repo, template, url):
    t = _escape(template, lambda b: chr(b).isascii() and (chr(b).isalnum() or (b in _ID_MARKS and b != ord("/"))))
    u = _escape(url, lambda b: chr(b).isascii() and (chr(b).isalnum() or b in _ID_MARKS))
    return f"oai:{repo}:{t}/{u}"
