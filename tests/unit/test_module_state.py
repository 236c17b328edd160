"""No module-level mutable state and no environment read at import, in the packages that hold to it.

Every module of ``CHECKED`` is parsed with ``ast``: a module-level assignment of a dict, list or
set (a display, a comprehension, ``dict()``/``list()``/``set()``/``defaultdict()``) is mutable
state shared by everything in the process; a read of ``os.environ``/``os.getenv`` outside a
function happens at import. Tables are ``MappingProxyType``/``tuple``/``frozenset``; settings
are read when used. (The other packages are to join ``CHECKED`` once they hold to it too.)
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "mimesisbench"
CHECKED: tuple[str, ...] = ("engine", "monitoring", "backends", "model", "jobs.py", "native.py", "errors.py")
MUTABLE_CALLS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque"})
MUTABLE_NODES = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)


def _files() -> list[Path]:
    out: list[Path] = []
    for name in CHECKED:
        path = SRC / name
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


def _is_mutable(value: ast.expr | None) -> bool:
    if isinstance(value, MUTABLE_NODES):
        return True
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in MUTABLE_CALLS


def _import_time_nodes(tree: ast.Module) -> list[ast.AST]:
    """Nodes that run at import: the module body, outside function bodies (class bodies run)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            out += node.decorator_list if not isinstance(node, ast.Lambda) else []
            continue
        out.append(node)
        todo += ast.iter_child_nodes(node)
    return out


def findings(path: Path, root: Path = SRC.parent.parent) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.relative_to(root)
    found = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_mutable(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if names != ["__all__"]:
                found.append(f"{where}:{node.lineno}: module-level mutable {', '.join(names)} (make it immutable)")
    for expr in _import_time_nodes(tree):
        if isinstance(expr, ast.Attribute) and expr.attr in ("environ", "getenv"):
            found.append(f"{where}:{expr.lineno}: os.{expr.attr} read at import (read it where it is used)")
    return found


def test_no_module_level_mutable_state_nor_environment_reads_at_import() -> None:
    found = [line for path in _files() for line in findings(path)]
    assert not found, "\n".join(found)


def test_the_checker_finds_both(tmp_path: Path) -> None:
    path = tmp_path / "sample.py"
    path.write_text(
        "import os\nCACHE = {}\nTABLE = (1, 2)\nHOME = os.environ.get('HOME')\n\ndef f():\n    return os.environ\n",
        encoding="utf-8",
    )
    assert findings(path, root=tmp_path) == [
        "sample.py:2: module-level mutable CACHE (make it immutable)",
        "sample.py:4: os.environ read at import (read it where it is used)",
    ]
