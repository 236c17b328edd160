"""``simnn:``: a simulated NameNode (``mimesisbench.sim``), no server needed.

A run or a micro-benchmark against it is not replayed in real time: the whole schedule is
simulated in virtual time (``run.virtual``, ``sim.ops``), far faster than real time, and written as a run
directory like any other (every operation ``ok``: the model is of time, not of the namespace;
``memory`` is the reference for what operations do). Its operations, called one by one, do
nothing: the replay's workers never call them.

URL: ``simnn:`` with options after ``?``, ``&``-separated::

    calibration=PATH   a calibration (``simnn calibrate -o DIR``: DIR or its calibration.json);
                       default: the built-in one (measured on a managed HDFS 3.4.3, 2 cores)
    handlers=N         handler threads (dfs.namenode.handler.count)
    fair=true|false    the namesystem lock's fairness (dfs.namenode.fslock.fair)
    cores=N            the host's cores (0: unlimited)
    colocated=true|false  the clients' CPU comes from those cores
    sync=DURATION      one edit-log sync (e.g. 0.2ms)
    wake=DURATION      a handler's wake-up after a lock hand-over
    park=DURATION      the CPU a handler spends parking for the lock and waking again
    dispatch=DURATION  the host's switch to a thread that waited for a core (the core idle
                       meanwhile; fitted by simnn calibrate --fit-dispatch)
    edit=DURATION      the edit-log thread's CPU per edit after the sync (sending its answer;
                       asynchronous edit logging only); 0: no such thread
    async_edits=true|false  a write's handler goes on before its edit is synced (Hadoop 3's
                       default, dfs.namenode.edits.asynclogging), or waits for the sync
    other=SHARE        the host's other work (threads the model leaves out: the JVM's compiler
                       and collector, the kernel's workers), a share of one core (e.g. 0.1), in
                       runs that each hold a core, the threads placed behind one waiting for it;
                       0: none (the calibration's NameNode CPU has the host's in it)
    other_run=DURATION  its runs' mean length (default 2ms)
    other_place=CHANCE  the chance that a thread woken while a run holds a core is placed behind it,
                       whether or not another core is free (e.g. 0.01); default: a free core is
                       taken, and with none free the threads are placed on the cores in turn
    slow_sync=DURATION  a slow sync's mean extra length (the calibration's edits make their syncs
                       slow with each operation's fitted chance); 0ms: no sync is slow
    seed=N             the draws of each call's costs (default 0)
    engine=auto|native|simpy

Settings given in the URL override the calibration's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

from mimesisbench.backends.null import NullBackend
from mimesisbench.backends.wrap_spec import parse_duration
from mimesisbench.errors import ConfigError
from mimesisbench.sim.model import Calibration
from mimesisbench.units import parse_flag

CALIBRATION_FILE = "calibration.json"
BUILTIN = "builtin"
_OPTIONS = ("calibration", "handlers", "fair", "cores", "colocated", "async_edits", "sync", "wake", "park",
            "dispatch", "edit", "other", "other_run", "other_place", "slow_sync", "seed", "engine")
#: what an experiment's ``kind = "simnn"`` factor may set (``with_options``)
FACTOR_OPTIONS = ("calibration", "handlers", "fair", "cores", "colocated", "async_edits", "sync", "wake", "park",
                  "dispatch", "edit", "other", "other_run", "other_place", "slow_sync", "seed")


@dataclass(frozen=True)
class SimnnOptions:
    """What a ``simnn:`` URL says."""

    calibration: str = BUILTIN
    overrides: tuple[tuple[str, Any], ...] = ()
    seed: int = 0
    engine: str = "auto"

    def load(self) -> Calibration:
        """The calibration with the URL's settings applied."""
        if self.calibration == BUILTIN:
            text = resources.files("mimesisbench").joinpath("data/simnn_calibration.json").read_text(encoding="utf-8")
            base = Calibration.from_json(json.loads(text), "the built-in calibration")
        else:
            base = Calibration.load(calibration_file(Path(self.calibration)))
        return base.with_settings(**dict(self.overrides)) if self.overrides else base


def calibration_file(path: Path) -> Path:
    """A calibration directory's ``calibration.json``, or the file given."""
    return path / CALIBRATION_FILE if path.is_dir() else path


def _int(text: str, key: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"simnn: {key}={text!r} is not an integer") from None
    if value < minimum:
        raise ConfigError(f"simnn: {key} must be >= {minimum}, got {value}")
    return value


def _share(text: str, key: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"simnn: {key}={text!r} is not a number (a share of one core, e.g. 0.1)") from None
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"simnn: {key} must be a share of one core >= 0, got {text!r}")
    return value


def _chance(text: str, key: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"simnn: {key}={text!r} is not a number (a chance from 0 to 1, e.g. 0.005)") from None
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise ConfigError(f"simnn: {key} must be a chance from 0 to 1, got {text!r}")
    return value


def parse_simnn_url(url: str) -> SimnnOptions:
    """``simnn:?handlers=10&fair=false`` -> ``SimnnOptions`` (``ConfigError`` names a bad option)."""
    scheme, _, rest = url.partition(":")
    if scheme.strip().lower() != "simnn":
        raise ConfigError(f"not a simnn URL: {url!r}")
    rest = rest.strip()
    if rest and not rest.startswith("?"):
        raise ConfigError(f"simnn: options go after '?' (simnn:?handlers=10&fair=false), got {url!r}")
    calibration, seed, engine = BUILTIN, 0, "auto"
    overrides: list[tuple[str, Any]] = []
    for item in filter(None, (s.strip() for s in rest[1:].split("&"))):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in _OPTIONS:
            raise ConfigError(f"simnn: unknown option {item!r} (options: {', '.join(_OPTIONS)})")
        value = value.strip()
        if key == "calibration":
            if not value:
                raise ConfigError("simnn: calibration= needs a path")
            calibration = value
        elif key == "seed":
            seed = _int(value, key, 0)
        elif key == "engine":
            if value not in ("auto", "native", "simpy"):
                raise ConfigError(f"simnn: engine must be auto, native or simpy, got {value!r}")
            engine = value
        elif key in ("handlers", "cores"):
            overrides.append((key, _int(value, key, 1 if key == "handlers" else 0)))
        elif key in ("fair", "colocated", "async_edits"):
            overrides.append((key, parse_flag(value, f"simnn: {key}")))
        elif key == "other":
            overrides.append(("other_share", _share(value, key)))
        elif key == "other_place":
            overrides.append(("other_place", _chance(value, key)))
        elif key == "other_run":
            overrides.append(("other_s", parse_duration(value, f"simnn: {key}")))
        else:
            overrides.append((f"{key}_s", parse_duration(value, f"simnn: {key}")))
    return SimnnOptions(calibration, tuple(overrides), seed, engine)


def with_options(url: str, options: Mapping[str, object]) -> str:
    """``url`` with ``options`` set in its query (a bool as true/false), replacing what it had;
    the result is checked like any simnn URL."""
    head, _, query = url.partition("?")
    items = [item for item in query.split("&") if item.strip() and item.partition("=")[0].strip() not in options]
    for key, value in options.items():
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        items.append(f"{key}={text}")
    joined = f"{head}?{'&'.join(items)}" if items else head
    parse_simnn_url(joined)
    return joined


class SimnnBackend(NullBackend):
    """The simulated NameNode; ``run`` and ``micro`` simulate against it (``run.virtual``,
    ``sim.ops``). Called one by one its operations do nothing, as ``null``'s (the replay's
    workers never call them)."""

    scheme: ClassVar[str] = "simnn"
    #: simulated in virtual time by ``run.virtual``, not replayed by workers
    virtual_time: ClassVar[bool] = True
    #: client slots per worker when the run does not say (the HDFS backend's)
    default_concurrency: ClassVar[int] = 64

    def __init__(self, url: str = "simnn:") -> None:
        super().__init__(url)
        self.options = parse_simnn_url(url)
        self.calibration = self.options.load()

    def describe(self) -> dict[str, Any]:
        cal = self.calibration
        return {
            "scheme": self.scheme,
            "url": self.url,
            "calibration": self.options.calibration,
            "settings": dict(cal.to_json()["settings"]),
            "calibration_source": dict(cal.source),
            "seed": self.options.seed,
        }
