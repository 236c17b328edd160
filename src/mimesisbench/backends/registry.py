"""Backends by URL: ``posix:/some/dir``, ``hdfs://host:port/dir``, ``memory``, ``null``, ``simnn:``
(a simulated NameNode, ``backends.simnn``).

The URL is a backend's whole configuration, so every worker process (or a remote actor) opens
its own instance from the same string. Third-party and test backends are named by import path:
``py:package.module:ClassName`` optionally followed by ``?`` and free text the class parses
itself; the class receives the whole URL. Wrappers go in front of any of these, outermost first:
``delay:2ms+rate:5000+posix:/dir`` (``backends.wrappers``).
"""

from __future__ import annotations

import importlib
from types import MappingProxyType

from mimesisbench.backends.base import Backend
from mimesisbench.errors import ConfigError

#: scheme -> "module:Class" (read-only; imported lazily so unused backends cost nothing)
BUILTIN_BACKENDS = MappingProxyType(
    {
        "posix": "mimesisbench.backends.posix:PosixBackend",
        "memory": "mimesisbench.backends.memory:MemoryBackend",
        "null": "mimesisbench.backends.null:NullBackend",
        "hdfs": "mimesisbench.backends.hdfs:HdfsBackend",
        "simnn": "mimesisbench.backends.simnn:SimnnBackend",
    }
)


def scheme_of(url: str) -> str:
    """``posix:/x`` -> ``posix``; ``memory`` -> ``memory``; ``hdfs://h:1/x`` -> ``hdfs``."""
    scheme, sep, _ = url.partition(":")
    return scheme.strip().lower() if sep else url.strip().lower()


def _load(target: str, url: str) -> type[Backend]:
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigError(f"backend {url!r}: module {module_name!r} is not available ({exc.name} missing)") from None
    cls = getattr(module, class_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise ConfigError(f"backend {url!r}: {target} is not a Backend class")
    return cls


#: the wrappers' schemes (``backends.wrappers``)
WRAPPER_SCHEMES = frozenset({"delay", "rate", "fail"})


def innermost_url(url: str) -> str:
    """The backend a chain of wrappers ends in: ``delay:2ms+hdfs://h:1/x`` -> ``hdfs://h:1/x``."""
    from mimesisbench.backends.wrappers import split_head

    while scheme_of(url) in WRAPPER_SCHEMES:
        url = split_head(url)[1]
    return url


def backend_class(url: str) -> type[Backend]:
    """The class serving ``url`` (raises ``ConfigError`` for an unknown scheme)."""
    if not url or not url.strip():
        raise ConfigError("no backend given (use posix:/dir, hdfs://host:port/dir, memory, null or simnn:)")
    scheme = scheme_of(url)
    if scheme in WRAPPER_SCHEMES:
        from mimesisbench.backends.wrappers import split_head, wrapper_class

        inner = backend_class(split_head(url)[1])
        if getattr(inner, "virtual_time", False):
            raise ConfigError(f"backend {url!r}: {scheme}: wraps a server replayed in real time; {inner.scheme} is "
                              "simulated in virtual time (set its own options instead: docs/simnn.md)")
        return wrapper_class(scheme, inner)
    if scheme == "py":
        target = url.split(":", 1)[1].split("?", 1)[0]
        if ":" not in target:
            raise ConfigError(f"backend {url!r}: use py:package.module:ClassName")
        return _load(target, url)
    builtin = BUILTIN_BACKENDS.get(scheme)
    if builtin is None:
        known = ", ".join(sorted(BUILTIN_BACKENDS))
        wrappers = ", ".join(sorted(WRAPPER_SCHEMES))
        raise ConfigError(f"unknown backend {url!r} (known schemes: {known}; or py:module:Class; "
                          f"wrappers in front of one: {wrappers})")
    return _load(builtin, url)


def open_backend(url: str) -> Backend:
    """A new, unconnected backend instance for ``url``."""
    return backend_class(url)(url)
