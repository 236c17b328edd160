"""Paths anonymised by a keyed hash of each component, for traces that must not leave the site.

Each name between slashes becomes ``HMAC-SHA256(key, name)``, written as 16 lowercase base32
characters (80 bits: two names of a namespace of a billion collide with odds below 1e-5). The
same name under the same key always gives the same result, wherever it stands, so the tree keeps
its shape: the depth of every path, which paths share a parent, how many children a directory
has, and that ``/a/b`` was renamed to ``/a/c``. Without the key the names cannot be recovered or
checked against a guess. The key itself is never written anywhere.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import polars as pl

from mimesisbench.errors import InputError

#: characters of each anonymised name
NAME_CHARS = 16
#: the shortest key accepted (bytes): a short key can be found by trying every name it could hide
MIN_KEY_BYTES = 16


def anonymous_name(key: bytes, name: str) -> str:
    """The anonymised form of one path component (never empty, never ``.`` or ``..``)."""
    digest = hmac.new(key, name.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
    return base64.b32encode(digest).decode("ascii")[:NAME_CHARS].lower()


def anonymise_paths(paths: pl.Series, key: bytes) -> pl.Series:
    """Each absolute path with every component anonymised (nulls stay null, ``/`` stays ``/``).
    Each distinct component is hashed once: a trace repeats the same few names millions of times."""
    if paths.len() == 0:
        return paths.cast(pl.String)
    parts = paths.cast(pl.String).str.split("/")
    names = parts.explode().drop_nulls().unique()
    names = names.filter(names != "")
    mapping = {n: anonymous_name(key, n) for n in names.to_list()}
    renamed = parts.list.eval(pl.element().replace(list(mapping), list(mapping.values())))
    return renamed.list.join("/").alias(paths.name)


def read_key(path: str | Path) -> bytes:
    """An anonymisation key from a file (its bytes; a trailing newline is ignored): kept out of
    the command line, where it would land in shell histories and process listings."""
    p = Path(path)
    try:
        key = p.read_bytes().rstrip(b"\r\n")
    except OSError as exc:
        raise InputError(f"--anonymise-key-file {p}: cannot read it ({exc.strerror or exc})") from None
    if len(key) < MIN_KEY_BYTES:
        raise InputError(
            f"--anonymise-key-file {p}: the key has {len(key)} bytes; use at least {MIN_KEY_BYTES} "
            "(e.g. head -c 32 /dev/urandom | base64 > KEYFILE)"
        )
    return key


__all__ = ["MIN_KEY_BYTES", "NAME_CHARS", "anonymise_paths", "anonymous_name", "read_key"]
