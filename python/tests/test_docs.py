"""The examples in the package's docstrings run as written."""

import doctest

import soif


def test_docstring_examples():
    failures, tried = doctest.testmod(soif, globs={"soif": soif}, optionflags=doctest.ELLIPSIS)
    assert tried >= 5
    assert failures == 0


def test_every_public_name_is_documented():
    for name in soif.__all__:
        obj = getattr(soif, name)
        if callable(obj):
            assert obj.__doc__, name
