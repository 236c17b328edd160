"""Reading and writing profiles; validation errors name the offending key."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mimesisbench import __version__
from mimesisbench.atomic import atomic_write_text
from mimesisbench.errors import InputError, ProfileError
from mimesisbench.profile.schema import PROFILE_VERSION, READABLE_PROFILE_VERSIONS, WorkloadProfile

#: the name that commands accept for the built-in demo profile (unless a file has that name)
DEMO_PROFILE = "demo"


def demo_profile_path() -> Path:
    """The packaged demo profile (two file types from the paper's Table 4)."""
    from importlib import resources

    return Path(str(resources.files("mimesisbench") / "data" / "demo_profile.json"))


def resolve_profile_arg(text: str) -> Path:
    """A profile path as a user gives it; ``demo`` names the built-in profile unless a file has that name."""
    path = Path(text)
    if text == DEMO_PROFILE and not path.exists():
        return demo_profile_path()
    return path


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
    version = data.get("version") if isinstance(data, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > PROFILE_VERSION:
        raise ProfileError(
            f"invalid profile {origin}:\n  version: format version {version} is newer than this mimesisbench "
            f"({__version__}) reads (versions {', '.join(map(str, READABLE_PROFILE_VERSIONS))}); upgrade mimesisbench"
        )
    try:
        return WorkloadProfile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(_describe(exc, origin)) from None
    except RecursionError:
        raise ProfileError(f"invalid profile {origin}: nested too deeply") from None


#: a profile file larger than this is refused unread (the imported Yahoo profile is about 32 MB)
MAX_PROFILE_BYTES = 1 << 30


def load_profile(path: str | Path) -> WorkloadProfile:
    """Read a profile file (JSON). ``path`` may also be a directory holding ``profile.json``.

    A missing or unreadable file raises ``InputError`` (exit 3); a file that is not a valid
    profile (bad JSON, nesting too deep, a key out of its limits) raises ``ProfileError`` (4)."""
    p = Path(path)
    if p.is_dir():
        p = p / "profile.json"
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_PROFILE_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"profile not found: {p}") from None
    except OSError as exc:
        raise InputError(f"cannot read profile {p}: {exc.strerror or exc}") from None
    if len(raw) > MAX_PROFILE_BYTES:
        raise ProfileError(f"profile {p} is larger than {MAX_PROFILE_BYTES >> 20} MiB; not a profile")
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_constants)
    except RecursionError:
        raise ProfileError(f"profile {p} is not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
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
            # One C-encoded call: the same text as joining ``_scalar`` of each item, about ten
            # times faster on the long number arrays a fitted profile holds.
            try:
                return json.dumps(obj, allow_nan=False)
            except ValueError:
                raise ProfileError("refusing to write NaN or infinity into a profile") from None
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
    """Where the explicit directory list named by ``namespace.tree_file`` lives, if any.

    It must resolve (symbolic links followed) to a regular file inside the profile's directory:
    ``../../etc/passwd`` or an absolute path elsewhere is refused (``ProfileError``)."""
    name = profile.namespace.tree_file
    if name is None:
        return None
    base = Path(profile_path)
    base_dir = (base if base.is_dir() else base.parent).resolve()
    found = (base_dir / name).resolve()
    if not found.is_relative_to(base_dir):
        raise ProfileError(
            f"namespace.tree_file: {name!r} resolves to {found}, outside the profile's directory {base_dir}; "
            "the directory list must sit beside the profile"
        )
    if not found.is_file():
        raise ProfileError(f"namespace.tree_file: {found} does not exist or is not a file")
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
