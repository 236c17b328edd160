"""Import the 2014 MimesisBench profile format (``nnmetadata.properties``) into a profile.

The 2014 format is a folder (often zipped) of Java-properties files: ``<base>.common`` (global
keys), ``<base>.<j>`` for every type j (histograms ``<NAME>_CLUSTER<j>_KEYS`` / ``_WEIGHTS``) and
``<base>.namespace`` (the generated directory tree, one path per line). ``import_2014`` maps it
onto the version-1 profile; every choice it makes is written into ``source.notes``.
"""

from __future__ import annotations

import hashlib
import math
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from mimesisbench import __version__
from mimesisbench.errors import InputError, ProfileError
from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.io import save_profile
from mimesisbench.profile.schema import (
    MAX_TYPES,
    FileType,
    GapSampling,
    NamespaceShape,
    OpMix,
    ProfileSource,
    WorkloadProfile,
)

#: AOD's sentinel key (about 4 years): files with this age at deletion were never deleted
NOT_DELETED_MS = 126_227_808_000
#: weights that sum to 1 within this tolerance are renormalised; farther off is an error
WEIGHT_SUM_TOLERANCE = 1e-3
#: a renormalisation larger than this is reported in ``source.notes``
_NOTE_TOLERANCE = 1e-6

#: optional 2014 ratio keys and the OpMix fields they fill
_OPMIX_RATIOS = (
    ("RATIO_OF_DIR_LS_TO_ACCESSES", "dir_list_per_access"),
    ("RATIO_OF_MKDIRS_TO_CREATES", "mkdirs_per_create"),
    ("RATIO_OF_FILE_RENAMES_TO_CREATES", "file_renames_per_create"),
    ("RATIO_OF_DIR_RENAMES_TO_CREATES", "dir_renames_per_create"),
)
_FILE_LS_RATIO = "RATIO_OF_FILE_LS_TO_OPENS"
#: seed of the closing-rule calibration (recorded in each table and in ``source.notes``)
CALIBRATION_SEED = 2014
_GAP_NOTE = (
    "generator table, not a measurement: the closing rule (accesses within H_j, a last access at "
    "first + H_j) draws interarrivals from this F'_j so that the pooled generated interarrivals "
    "follow F_j; ks / ks_uncalibrated: pooled gaps vs F_j with / without it (simulated)"
)
#: what the importer maps how (first lines of ``source.notes``)
_MAPPING_NOTES = (
    "imported from the 2014 MimesisBench format (nnmetadata.properties)",
    "C_j <- CREATE_INTERARRIVAL, G_j <- ACTIVATION_TIME, H_j <- DEACTIVATION_TIME, "
    "F_j <- OPEN_INTERARRIVAL_CLUSTER<j>_PER_FILE; histograms (keys, weights) kept as tables, "
    "duplicate keys merged, weights renormalised",
    f"D_j <- AOD measured from creation; the key {NOT_DELETED_MS} ms means 'not deleted': its weight "
    "is 1 - delete_share and it is dropped from D_j (renormalised); without it every file is deleted "
    "(the 2014 generator deleted at max(creation + AOD, deactivation + 1 ms))",
    "observed: type_access_interarrival <- OPEN_INTERARRIVAL, age_at_access <- AOA",
    "span_population 'created': the format's G_j and H_j hold one sample per file created in the trace's "
    "window (and C_j one fewer), while F_j pools the gaps of every accessed file, most of them "
    "pre-existing; created files keep H_j exact, pre-existing files follow the renewal rule as a "
    "stopping time (F_j exact)",
    "w_j <- CLUSTER_WEIGHTS, pre_j <- PRE_EXISTING_FILES<j>, n <- TARGET_CREATES, window <- MAX_TIME",
    "namespace: from the directory list (root at depth 0); files_at_depth <- FILES_AT_DEPTH shifted by +1 "
    "(the 2014 tree has directories at depth d in the proportion FILES_AT_DEPTH[d], so a file of 2014 "
    "depth d sits in a directory at depth d, i.e. at depth d+1 here)",
)


# ---------------------------------------------------------------------------------- reading files
#: at most this many bytes are read from one file of a 2014 profile (Yahoo's largest is 2.6 MB) ...
MAX_MEMBER_BYTES = 256 << 20
#: ... and from all of them together (Yahoo's: 22.5 MB), so that a zip bomb is refused unpacked
MAX_TOTAL_BYTES = 1 << 30


def _read_member(zf: zipfile.ZipFile, name: str, budget: int, origin: str) -> bytes:
    """A member's bytes, refused once it exceeds its limit or the budget left (sizes in the zip's
    directory can lie: the limit holds for what is actually decompressed)."""
    limit = min(MAX_MEMBER_BYTES, budget)
    if zf.getinfo(name).file_size > limit:
        raise ProfileError(f"{origin}: member {name} unpacks to more than {limit >> 20} MiB; refusing it")
    with zf.open(name) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ProfileError(f"{origin}: member {name} unpacks to more than {limit >> 20} MiB; refusing it")
    return data


def _read_texts(path: Path) -> tuple[dict[str, str], str]:
    """The files of a 2014 profile keyed by suffix (``common``, ``namespace``, ``1`` ...), and a label."""
    if path.is_file():
        try:
            with zipfile.ZipFile(path) as zf:
                members = [n for n in zf.namelist() if not n.endswith("/")]
                base = _base_name(members, str(path))
                texts: dict[str, str] = {}
                budget = MAX_TOTAL_BYTES
                for suffix, name in _by_suffix(members, base).items():
                    data = _read_member(zf, name, budget, str(path))
                    budget -= len(data)
                    texts[suffix] = data.decode("utf-8")
                return texts, base
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as exc:
            raise ProfileError(f"{path}: not a readable zip file nor a folder of a 2014 profile ({exc})") from None
        except UnicodeDecodeError as exc:
            raise ProfileError(f"{path}: a member is not text ({exc.reason})") from None
        except OSError as exc:
            raise InputError(f"cannot read 2014 profile {path}: {exc.strerror or exc}") from None
    if path.is_dir():
        files = {str(p.relative_to(path)): p for p in sorted(path.rglob("*")) if p.is_file()}
        base = _base_name(list(files), str(path))
        chosen = _by_suffix(files, base)
        total = sum(files[n].stat().st_size for n in chosen.values())
        if total > MAX_TOTAL_BYTES or any(files[n].stat().st_size > MAX_MEMBER_BYTES for n in chosen.values()):
            raise ProfileError(f"{path}: the profile files are larger than a 2014 profile may be; refusing them")
        try:
            return {s: files[n].read_text(encoding="utf-8") for s, n in chosen.items()}, base
        except UnicodeDecodeError as exc:
            raise ProfileError(f"{path}: cannot read the profile files ({exc})") from None
        except OSError as exc:
            raise InputError(f"{path}: cannot read the profile files ({exc})") from None
    raise InputError(f"2014 profile not found: {path}")


def _base_name(names: list[str], origin: str) -> str:
    commons = [n for n in names if n.endswith(".common") and "__MACOSX" not in n]
    if len(commons) != 1:
        raise ProfileError(f"{origin}: expected one '*.common' file of a 2014 profile, found {len(commons)}")
    return commons[0][: -len(".common")]


def _by_suffix(names: Iterable[str], base: str) -> dict[str, str]:
    """``{suffix: name}`` for the names ``<base>.<suffix>``."""
    out: dict[str, str] = {}
    for name in names:
        if name.startswith(base + "."):
            out[name[len(base) + 1 :]] = name
    return out


def parse_properties(text: str, origin: str) -> dict[str, str]:
    """Java-properties ``KEY = value`` pairs (``=`` or ``:``, ``#``/``!`` comments, ``\\`` continuations).

    A key listed more than once keeps its non-empty value (the 2014 files list some keys first
    empty, then filled); two different non-empty values are an error.
    """
    out: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut <= 0:
            raise ProfileError(f"{origin}: cannot read line {line[:60]!r} (expected KEY = value)")
        key, value = line[:cut].strip(), line[cut + 1 :].strip()
        old = out.get(key, "")
        if old and value and old != value:
            raise ProfileError(f"{origin}: key {key} is given twice with different values")
        out[key] = value or old
    return out


@dataclass(frozen=True)
class _Props:
    """The keys of one file, with typed getters whose errors name the file and key."""

    origin: str
    keys: dict[str, str]
    notes: list[str]

    def has(self, key: str) -> bool:
        return bool(self.keys.get(key))

    def raw(self, key: str) -> str:
        value = self.keys.get(key, "")
        if not value:
            raise ProfileError(f"{self.origin}: key {key} is missing or empty")
        return value

    def integer(self, key: str) -> int:
        text = self.raw(key)
        try:
            value = float(text)
        except ValueError:
            raise ProfileError(f"{self.origin}: key {key}: {text[:40]!r} is not a number") from None
        if not math.isfinite(value) or value != int(value) or value < 0:
            raise ProfileError(f"{self.origin}: key {key}: {text[:40]!r} is not a non-negative integer")
        return int(value)

    def number(self, key: str) -> float:
        text = self.raw(key)
        try:
            value = float(text)
        except ValueError:
            raise ProfileError(f"{self.origin}: key {key}: {text[:40]!r} is not a number") from None
        if not math.isfinite(value) or value < 0:
            raise ProfileError(f"{self.origin}: key {key}: {text[:40]!r} is not a non-negative number")
        return value

    def numbers(self, key: str) -> np.ndarray:
        """A comma-separated list of non-negative numbers; the key must be present (it may be empty)."""
        if key not in self.keys:
            raise ProfileError(f"{self.origin}: key {key} is missing")
        text = self.keys[key].strip().rstrip(",")
        if not text:
            return np.empty(0, dtype=np.float64)
        try:
            arr = np.asarray([float(v) for v in text.split(",")], dtype=np.float64)
        except ValueError:
            raise ProfileError(f"{self.origin}: key {key}: a value is not a number") from None
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise ProfileError(f"{self.origin}: key {key}: values must be finite and non-negative")
        return arr

    def histogram(self, prefix: str) -> tuple[np.ndarray, np.ndarray]:
        """``<prefix>_KEYS`` and ``<prefix>_WEIGHTS``: sorted, duplicates merged, weights normalised."""
        keys = self.numbers(prefix + "_KEYS")
        weights = self.numbers(prefix + "_WEIGHTS")
        if keys.size != weights.size:
            raise ProfileError(
                f"{self.origin}: key {prefix}_KEYS has {keys.size} values but {prefix}_WEIGHTS has {weights.size}"
            )
        if keys.size == 0:
            return keys, weights
        uniq, inverse = np.unique(keys, return_inverse=True)
        merged = np.bincount(inverse, weights=weights, minlength=uniq.size)
        return uniq, _normalised(merged, f"{self.origin}: key {prefix}_WEIGHTS", self.notes)


def _normalised(weights: np.ndarray, what: str, notes: list[str]) -> np.ndarray:
    total = float(weights.sum())
    if not math.isclose(total, 1.0, abs_tol=WEIGHT_SUM_TOLERANCE):
        raise ProfileError(f"{what}: weights sum to {total:.9g}, not 1")
    if abs(total - 1.0) > _NOTE_TOLERANCE:
        notes.append(f"{what}: weights summed to {total:.9g}; renormalised to 1")
    return weights / total


def _distribution(keys: np.ndarray, weights: np.ndarray) -> Distribution | None:
    if keys.size == 0:
        return None
    weights = weights / weights.sum()
    weights[-1] = max(0.0, 1.0 - float(weights[:-1].sum()))
    return Distribution(values=keys.tolist(), weights=weights.tolist())


# ---------------------------------------------------------------------------------- mapping
def _file_type(
    j: int, weight: float, pre: int, open_share: float, props: _Props, window_ms: int, notes: list[str]
) -> FileType:
    def hist(name: str) -> tuple[np.ndarray, np.ndarray]:
        return props.histogram(f"{name}_CLUSTER{j}")

    def per_file() -> tuple[np.ndarray, np.ndarray]:
        prefix = f"OPEN_INTERARRIVAL_CLUSTER{j}_PER_FILE"
        if prefix + "_KEYS" not in props.keys and f"OPEN_INTERARRIVAL_PER_FILE_CLUSTER{j}_KEYS" in props.keys:
            prefix = f"OPEN_INTERARRIVAL_PER_FILE_CLUSTER{j}"  # the README's spelling
        return props.histogram(prefix)

    create = _distribution(*hist("CREATE_INTERARRIVAL"))
    if weight > 0 and create is None:
        raise ProfileError(f"{props.origin}: key CREATE_INTERARRIVAL_CLUSTER{j}_KEYS is empty but type {j} has weight")
    activation = _distribution(*hist("ACTIVATION_TIME"))
    span = _distribution(*hist("DEACTIVATION_TIME"))
    access = _distribution(*per_file())
    accessed_share = 1.0
    if activation is None and span is None and access is None:
        accessed_share = 0.0
        notes.append(f"type {j}: no access histograms; its files are never accessed (accessed_share 0)")
    elif activation is None:
        raise ProfileError(f"{props.origin}: key ACTIVATION_TIME_CLUSTER{j}_KEYS is empty but the type has accesses")
    else:
        if span is None:
            span = Distribution.point(0.0)
            notes.append(f"type {j}: DEACTIVATION_TIME empty; active span set to 0 (one access per file)")
        if access is None:
            if span.values[-1] > 0:
                raise ProfileError(
                    f"{props.origin}: key OPEN_INTERARRIVAL_CLUSTER{j}_PER_FILE_KEYS is empty "
                    "but active spans are not 0"
                )
            access = Distribution.point(float(window_ms))
            notes.append(f"type {j}: no per-file interarrivals (one access per file); F_j is a placeholder")

    aod_keys, aod_weights = hist("AOD")
    sentinel = aod_keys == NOT_DELETED_MS
    not_deleted = float(aod_weights[sentinel].sum())
    kept_keys, kept_weights = aod_keys[~sentinel], aod_weights[~sentinel]
    delete_share = 0.0 if aod_keys.size == 0 else min(1.0, max(0.0, 1.0 - not_deleted))
    delete_delay = None
    if kept_keys.size and float(kept_weights.sum()) > 0 and delete_share > 0:
        delete_delay = _distribution(kept_keys, kept_weights / kept_weights.sum())
    else:
        delete_share = 0.0
    if aod_keys.size == 0:
        notes.append(f"type {j}: AOD empty; its files are never deleted")

    observed: dict[str, Distribution] = {}
    for label, name in (("type_access_interarrival", "OPEN_INTERARRIVAL"), ("age_at_access", "AOA")):
        dist = _distribution(*hist(name))
        if dist is not None:
            observed[label] = dist

    return FileType(
        id=j,
        weight=weight,
        pre_existing=pre,
        create_interarrival=create,
        activation_delay=activation,
        active_span=span,
        access_interarrival=access,
        delete_delay=delete_delay,
        delete_delay_origin="creation",
        delete_share=delete_share,
        open_share=open_share,
        accessed_share=accessed_share,
        span_population="created",
        observed=observed,
    )


def namespace_shape(dirs: list[str], files_at_depth: dict[int, float], tree_file: str | None = None) -> NamespaceShape:
    """Shape of a directory list (``/``, ``/a/``, ...): counts per depth (root = 0), subdirs per dir."""
    depths = np.zeros(len(dirs), dtype=np.int64)
    children: dict[str, int] = {}
    for i, d in enumerate(dirs):
        parts = [p for p in d.split("/") if p]
        depths[i] = len(parts)
        children.setdefault("/".join(parts), 0)
        if parts:
            parent = "/".join(parts[:-1])
            children[parent] = children.get(parent, 0) + 1
    per_depth = np.bincount(depths).tolist() if len(dirs) else []
    subdirs = Distribution.from_samples(list(children.values())) if children else None
    return NamespaceShape(
        directories=len(dirs),
        dirs_per_depth=per_depth,
        subdirs_per_dir=subdirs,
        files_at_depth=files_at_depth,
        tree_file=tree_file,
    )


def _directories(text: str, origin: str) -> list[str]:
    dirs = [line.strip() for line in text.splitlines() if line.strip()]
    for n, d in enumerate(dirs, start=1):
        if not d.startswith("/"):
            raise ProfileError(f"{origin}: line {n}: {d[:60]!r} is not an absolute directory path")
        parts = d.strip("/").split("/")
        if d != "/" and ("\x00" in d or any(p in ("", ".", "..") for p in parts)):
            raise ProfileError(f"{origin}: line {n}: {d[:60]!r} has an empty, '.' or '..' component or a NUL")
    if len(set(dirs)) != len(dirs):
        raise ProfileError(f"{origin}: a directory is listed twice")
    return dirs


def _op_mix(common: _Props, notes: list[str]) -> tuple[OpMix, float]:
    """The op mix from the optional RATIO_* keys, and every type's open share."""
    if common.has(_FILE_LS_RATIO):
        ratio = common.number(_FILE_LS_RATIO)
        open_share = 1.0 / (1.0 + ratio)
        notes.append(f"open_share = 1/(1+{_FILE_LS_RATIO}) = {open_share:.6g} for every type")
    else:
        open_share = 1.0
        notes.append(f"{_FILE_LS_RATIO} absent: open_share 1 (no file listings)")
    mix = {field: common.number(key) for key, field in _OPMIX_RATIOS if common.has(key)}
    absent = [key for key, _ in _OPMIX_RATIOS if not common.has(key)]
    if absent:
        notes.append("absent ratios taken as 0: " + ", ".join(absent))
    return OpMix.model_validate(mix), open_share


def _trace_stats(common: _Props, notes: list[str]) -> dict[str, float]:
    """CREATES_INTERARRIVAL (all types together) has no place in the model: keep its mean."""
    stats: dict[str, float] = {}
    if common.has("CREATES_INTERARRIVAL_KEYS"):
        dist = _distribution(*common.histogram("CREATES_INTERARRIVAL"))
        if dist is not None:
            stats["creates_interarrival_mean_ms"] = dist.mean()
        notes.append("CREATES_INTERARRIVAL (all types together) is descriptive: only its mean is kept, in trace_stats")
    return stats


def _calibrated(ft: FileType, seed: int, notes: list[str]) -> FileType:
    """The type with an ``access_gap_sampling`` table when calibrating the closing rule's
    interarrival sampling improves the pooled interarrivals (``synth.calibration``)."""
    from mimesisbench.synth.calibration import calibrate_gaps

    if ft.accessed_share <= 0 or ft.access_interarrival is None or ft.active_span is None:
        return ft
    cal = calibrate_gaps(ft.access_interarrival, ft.active_span, seed=seed, stream=ft.id)
    if cal is None or cal.rounds == 0 or cal.ks >= cal.ks_uncalibrated:
        return ft
    table = GapSampling(
        distribution=cal.distribution,
        ks=cal.ks,
        ks_uncalibrated=cal.ks_uncalibrated,
        seed=cal.seed,
        spans=cal.spans,
        rounds=cal.rounds,
        note=_GAP_NOTE,
    )
    notes.append(
        f"type {ft.id}: access_gap_sampling calibrated: pooled interarrival KS to F_j "
        f"{cal.ks_uncalibrated:.4f} -> {cal.ks:.4f}"
    )
    return ft.model_copy(update={"access_gap_sampling": table})


def import_2014(
    path: str | Path, calibrate: bool = True, calibration_seed: int = CALIBRATION_SEED
) -> tuple[WorkloadProfile, list[str]]:
    """Read a 2014 MimesisBench profile (zip or unzipped folder): the profile and its directory list.

    With ``calibrate`` (the default) every accessed type gets an ``access_gap_sampling`` table
    when it helps: the distribution the generator's closing rule samples so that the pooled
    generated interarrivals follow F_j (``mimesisbench.synth.calibration``, seeded with
    ``calibration_seed``; about half a CPU-second per type)."""
    src = Path(path)
    texts, base = _read_texts(src)
    label = Path(base).name
    if "common" not in texts:
        raise ProfileError(f"{src}: no {label}.common file")
    notes: list[str] = []
    common = _Props(f"{label}.common", parse_properties(texts["common"], f"{label}.common"), notes)
    k = common.integer("FILE_TYPES")
    if not 1 <= k <= MAX_TYPES:
        raise ProfileError(f"{common.origin}: key FILE_TYPES must lie in 1..{MAX_TYPES}, got {k}")
    window_ms = common.integer("MAX_TIME")
    if window_ms <= 0:
        raise ProfileError(f"{common.origin}: key MAX_TIME must be positive")
    n = common.integer("TARGET_CREATES")
    weights = common.numbers("CLUSTER_WEIGHTS")
    if weights.size != k:
        raise ProfileError(f"{common.origin}: key CLUSTER_WEIGHTS has {weights.size} values, FILE_TYPES is {k}")
    weights = _normalised(weights, f"{common.origin}: key CLUSTER_WEIGHTS", notes)
    depth_keys, depth_weights = common.histogram("FILES_AT_DEPTH")
    if np.any(depth_keys != np.round(depth_keys)) or np.any(depth_keys < 1):
        raise ProfileError(f"{common.origin}: key FILES_AT_DEPTH_KEYS must be positive integers")

    notes[:0] = list(_MAPPING_NOTES)
    op_mix, open_share = _op_mix(common, notes)
    trace_stats = _trace_stats(common, notes)

    types = []
    for j in range(1, k + 1):
        if str(j) not in texts:
            raise ProfileError(f"{src}: no {label}.{j} file for type {j} of FILE_TYPES={k}")
        origin = f"{label}.{j}"
        props = _Props(origin, parse_properties(texts[str(j)], origin), notes)
        pre = common.integer(f"PRE_EXISTING_FILES{j}")
        try:
            ft = _file_type(j, float(weights[j - 1]), pre, open_share, props, window_ms, notes)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise ProfileError(f"{origin}: type {j} is not valid: {exc}") from None
        types.append(_calibrated(ft, calibration_seed, notes) if calibrate else ft)
    if calibrate:
        notes.append(f"access_gap_sampling: closing-rule interarrival sampling calibrated with seed {calibration_seed}")

    if "namespace" not in texts:
        raise ProfileError(f"{src}: no {label}.namespace file")
    dirs = _directories(texts["namespace"], f"{label}.namespace")
    files_at_depth = {int(d) + 1: float(w) for d, w in zip(depth_keys, depth_weights) if w > 0}
    try:
        shape = namespace_shape(dirs, files_at_depth)
    except ValueError as exc:
        raise ProfileError(f"{src}: the namespace is not valid: {exc}") from None

    digest = hashlib.sha256(src.read_bytes()).hexdigest() if src.is_file() else ""
    if digest:
        notes.append(f"input sha256 {digest}")
    source = ProfileSource(
        kind="imported-2014",
        inputs=[str(src.resolve())],
        tool_version=__version__,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        notes=notes,
        trace_stats=trace_stats,
    )
    try:
        profile = WorkloadProfile(
            name=label,
            source=source,
            window_ms=window_ms,
            total_creates=n,
            types=types,
            op_mix=op_mix,
            namespace=shape,
        )
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise ProfileError(f"{src}: the imported profile is invalid: {exc}") from None
    return profile, dirs


def save_imported(profile: WorkloadProfile, dirs: list[str], out_path: str | Path) -> Path:
    """Write the profile and, next to it, ``<stem>.dirs.txt`` (named in ``namespace.tree_file``)."""
    out = Path(out_path)
    if out.suffix == "":
        out = out.with_suffix(".json")
    tree = out.with_name(out.stem + ".dirs.txt")
    ns = profile.namespace.model_copy(update={"tree_file": tree.name})
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = tree.with_name(tree.name + ".tmp")
    tmp.write_text("".join(d + "\n" for d in dirs), encoding="utf-8")
    tmp.replace(tree)
    return save_profile(profile.model_copy(update={"namespace": ns}), out)
