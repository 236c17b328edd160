"""Reading and writing profiles; validation errors name the offending key."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mimesisbench.atomic import atomic_write_text
from mimesisbench.errors import ProfileError
from mimesisbench.profile.schema import WorkloadProfile


def _key_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


#: a validator message may start with the key it is about, relative to the model: ``weights: ...``
_KEY_PART = r"[A-Za-z_]\w*(?:\[[\w*]+\])*"
_MSG_KEY = re.compile(rf"^(?P<key>{_KEY_PART}(?:\.{_KEY_PART})*): (?P<rest>.+)$", re.S)


def _describe(err: ValidationError, origin: str) -> str:
    lines = [f"invalid profile {origin}:"]
    for item in err.errors()[:20]:
        loc = tuple(p for p in item["loc"] if not (isinstance(p, str) and p.startswith("function-after")))
        msg = str(item["msg"]).removeprefix("Value error, ")
        path = _key_path(loc)
        match = _MSG_KEY.match(msg)
        if match:
            key = match["key"]
            path = key if not loc else path + ("" if key.startswith("[") else ".") + key
            msg = match["rest"]
        lines.append(f"  {path}: {msg}")
    if len(err.errors()) > 20:
        lines.append(f"  ... and {len(err.errors()) - 20} more problems")
    return "\n".join(lines)


def _constants(token: str) -> float:
    # NaN / Infinity are read as floats so that validation rejects them naming their key
    return float(token)


def profile_from_dict(data: Any, origin: str = "") -> WorkloadProfile:
    """Validate a decoded document into a profile, or raise ``ProfileError`` naming the key."""
    try:
        return WorkloadProfile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(_describe(exc, origin)) from None


def load_profile(path: str | Path) -> WorkloadProfile:
    """Read a profile file (JSON). ``path`` may also be a directory holding ``profile.json``."""
    p = Path(path)
    if p.is_dir():
        p = p / "profile.json"
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProfileError(f"profile not found: {p}") from None
    except OSError as exc:
        raise ProfileError(f"cannot read profile {p}: {exc.strerror}") from None
    try:
        data = json.loads(text, parse_constant=_constants)
    except ValueError as exc:
        raise ProfileError(f"profile {p} is not valid JSON: {exc}") from None
    return profile_from_dict(data, str(p))


def profile_to_json(profile: WorkloadProfile) -> str:
    """Readable JSON: one key per line, number arrays kept on one line each."""
    data = profile.model_dump(mode="json", exclude_defaults=False)
    return _dumps(data, 0) + "\n"


def _dumps(obj: Any, indent: int) -> str:
    pad = "  " * (indent + 1)
    end = "  " * indent
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad}{json.dumps(str(k))}: {_dumps(v, indent + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + end + "}"
    if isinstance(obj, list):
        if all(isinstance(v, (int, float, str, bool)) or v is None for v in obj):
            return "[" + ", ".join(_scalar(v) for v in obj) + "]"
        return "[\n" + ",\n".join(pad + _dumps(v, indent + 1) for v in obj) + "\n" + end + "]"
    return _scalar(obj)


def _scalar(value: Any) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ProfileError("refusing to write NaN or infinity into a profile")
        return repr(value)
    return json.dumps(value)


def save_profile(profile: WorkloadProfile, path: str | Path) -> Path:
    """Write atomically (``mimesisbench.atomic``: temporary file, then rename) so a failure never
    leaves half a profile; only a regular file is ever replaced."""
    p = Path(path)
    if p.suffix == "" and not p.exists():
        p = p.with_suffix(".json")
    return atomic_write_text(p, profile_to_json(profile))


def tree_file_path(profile_path: str | Path, profile: WorkloadProfile) -> Path | None:
    """Where the explicit directory list named by ``namespace.tree_file`` lives, if any."""
    if profile.namespace.tree_file is None:
        return None
    base = Path(profile_path)
    base_dir = base if base.is_dir() else base.parent
    found = base_dir / profile.namespace.tree_file
    if not found.is_file():
        raise ProfileError(f"namespace.tree_file: {found} does not exist")
    return found


def profile_hash(profile: WorkloadProfile) -> str:
    """A stable content hash (sha256 of the canonical JSON), recorded in schedules and runs.

    The time a profile was made (``source.created_at``) is left out: the same content imported or
    fitted twice hashes the same.
    """
    data = profile.model_dump(mode="json")
    data["source"].pop("created_at", None)
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()
