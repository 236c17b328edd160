"""The package's imports point down: a declared layer order, no cycles, engines and monitors
below ``run``.

Every module under ``src/mimesisbench`` is parsed with ``ast`` (nothing is imported), and every
import counts: at module level, inside functions, under ``if TYPE_CHECKING:``. A module's
package is the first component after ``mimesisbench`` (``mimesisbench.run.worker`` -> ``run``,
``mimesisbench.errors`` -> ``errors``, the package's own ``__init__`` -> ``mimesisbench``).

A failure names the importing file, the line and the imported module, and says which rule it
breaks. To see the whole graph::

    python tests/unit/test_import_layers.py            # packages, by layer, with their arrows
    python tests/unit/test_import_layers.py --modules  # ... and every module-level arrow

Adding a package: give it a place in ``LAYERS``. Importing across packages: only into a package
of a strictly lower layer (peers of one layer do not import each other). When an import would
point up, move what both sides need down (``mimesisbench.jobs`` is such a module) or pass a
callable down instead of importing up (``engine`` takes a job factory; ``model.selection`` takes
a function building a candidate's types).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
TOP = "mimesisbench"

#: bottom to top; a package may import only from packages of strictly lower layers
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    (TOP, "units", "native", "jobs", "atomic", "handover"),  # TOP: the package's __init__ (``__version__``)
    ("trace", "profile", "hdfs", "schedule"),
    ("model", "sim"),
    ("synth",),
    ("backends",),
    ("engine", "monitoring", "results", "micro", "netproxy", "datajobs"),
    ("run", "analysis"),
    ("report",),
    ("study",),
    ("cli",),
    ("__main__",),
)
#: packages that must never import ``run`` (nor anything above it), whatever the layers say
BELOW_RUN: tuple[str, ...] = ("engine", "monitoring")


@dataclass(frozen=True)
class Import:
    """One import statement's target, resolved to a module of the package."""

    importer: str  # dotted module name
    path: Path  # the importer's file
    line: int
    target: str  # dotted module name (a module or package of mimesisbench)
    where: str  # "module level", "in a function", "under TYPE_CHECKING"

    def at(self) -> str:
        return f"{self.path.relative_to(SRC.parent)}:{self.line}"


def module_files(src: Path = SRC) -> dict[str, Path]:
    """Every module of the package by dotted name (``pkg/__init__.py`` is ``pkg``)."""
    out: dict[str, Path] = {}
    for path in sorted((src / TOP).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else TOP


def _resolve(name: str, modules: Mapping[str, Path]) -> str:
    """The longest prefix of ``name`` that is a module (``a.b.attr`` -> ``a.b``)."""
    parts = name.split(".")
    while parts and ".".join(parts) not in modules:
        parts.pop()
    return ".".join(parts) if parts else TOP


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, where: str) -> Iterator[tuple[ast.AST, str]]:
    """Every node under ``node`` with where it sits (functions and TYPE_CHECKING blocks noted)."""
    for child in ast.iter_child_nodes(node):
        inner = where
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner = "in a function"
        elif isinstance(child, ast.If) and _is_type_checking(child.test) and where == "module level":
            yield child, where
            for sub in child.body:
                yield sub, "under TYPE_CHECKING"
                yield from _walk(sub, "under TYPE_CHECKING")
            for sub in child.orelse:
                yield sub, where
                yield from _walk(sub, where)
            continue
        yield child, inner
        yield from _walk(child, inner)


def imports_of(module: str, path: Path, modules: Mapping[str, Path]) -> list[Import]:
    """The imports of one module that land in the package (other modules are not followed)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: list[Import] = []
    for node, where in _walk(tree, "module level"):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            # ``from a import b``: b is a module of a, or a name defined in a
            names = [origin] * len(node.names)
            names = [f"{o}.{a.name}" if f"{o}.{a.name}" in modules else o for o, a in zip(names, node.names)]
        for name in names:
            if name == TOP or name.startswith(TOP + "."):
                target = _resolve(name, modules)
                imp = Import(module, path, getattr(node, "lineno", 0), target, where)
                if target != module and imp not in found:
                    found.append(imp)
    return found


def all_imports(src: Path = SRC) -> list[Import]:
    modules = module_files(src)
    return [imp for module, path in modules.items() for imp in imports_of(module, path, modules)]


def layer_index() -> dict[str, int]:
    return {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}


def package_edges(imports: Iterable[Import]) -> dict[tuple[str, str], list[Import]]:
    """Arrows between packages, each with the imports that make it."""
    edges: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for imp in imports:
        a, b = package_of(imp.importer), package_of(imp.target)
        if a != b:
            edges[(a, b)].append(imp)
    return dict(edges)


def cycles(nodes: Iterable[str], arrows: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each as a sorted list."""
    succ: dict[str, list[str]] = defaultdict(list)
    for a, b in arrows:
        succ[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # recursion depth is at most the number of modules of a package
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(set(nodes) | set(succ)):
        if node not in index:
            visit(node)
    return found


def _describe(imp: Import) -> str:
    return f"{imp.at()} ({imp.importer}, {imp.where}) imports {imp.target}"


def _cycle_report(component: list[str], edges: Mapping[tuple[str, str], list[Import]]) -> str:
    inside = set(component)
    lines = [f"cycle between {', '.join(component)}:"]
    for (a, b), imps in sorted(edges.items()):
        if a in inside and b in inside:
            lines += [f"  {a} -> {b}: {_describe(imp)}" for imp in imps]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- the tests


def test_every_package_has_a_layer() -> None:
    layer = layer_index()
    missing = sorted({package_of(m) for m in module_files()} - set(layer))
    assert not missing, (
        f"package(s) {', '.join(missing)} have no place in LAYERS ({Path(__file__).name}): "
        "declare where each sits in the layer order"
    )


def test_no_cycle_between_packages() -> None:
    edges = package_edges(all_imports())
    found = cycles({package_of(m) for m in module_files()}, edges)
    assert not found, "\n".join(_cycle_report(c, edges) for c in found)


def test_engine_and_monitoring_never_import_run() -> None:
    layer = layer_index()
    bad = [
        imp
        for imp in all_imports()
        if package_of(imp.importer) in BELOW_RUN
        and package_of(imp.target) in layer
        and layer[package_of(imp.target)] >= layer["run"]
    ]
    assert not bad, "engines and monitors stay below run (share records through mimesisbench.jobs):\n" + "\n".join(
        f"  {_describe(imp)}" for imp in bad
    )


def test_imports_follow_the_layer_order() -> None:
    layer = layer_index()
    bad = []
    for (a, b), imps in sorted(package_edges(all_imports()).items()):
        if a not in layer or b not in layer or layer[b] < layer[a]:
            continue  # an undeclared package fails test_every_package_has_a_layer
        rule = "a peer of the same layer" if layer[b] == layer[a] else f"layer {layer[b]}, above"
        bad += [f"  {_describe(imp)}: {b} is {rule} {a} (layer {layer[a]})" for imp in imps]
    assert not bad, f"imports against the layer order declared in {Path(__file__).name}:\n" + "\n".join(bad)


def test_no_cycle_between_modules_of_a_package() -> None:
    by_package: dict[str, list[Import]] = defaultdict(list)
    for imp in all_imports():
        if package_of(imp.importer) == package_of(imp.target):
            by_package[package_of(imp.importer)].append(imp)
    reports = []
    for package, imps in sorted(by_package.items()):
        edges: dict[tuple[str, str], list[Import]] = defaultdict(list)
        for imp in imps:
            edges[(imp.importer, imp.target)].append(imp)
        reports += [f"in {package}: " + _cycle_report(c, edges) for c in cycles([], edges)]
    assert not reports, "\n".join(reports)


def test_the_checker_sees_every_kind_of_import(tmp_path: Path) -> None:
    """Function-level, TYPE_CHECKING and relative imports are all arrows; attributes resolve to
    their module."""
    pkg = tmp_path / TOP
    for rel, text in {
        "__init__.py": "__version__ = '0'\n",
        "errors.py": "",
        "run/__init__.py": "",
        "run/worker.py": "from .. import errors\n",
        "engine/__init__.py": "",
        "engine/local.py": (
            "from typing import TYPE_CHECKING\n"
            "from mimesisbench import __version__\n"
            "if TYPE_CHECKING:\n    from mimesisbench.run.worker import Worker\n"
            "def f():\n    import mimesisbench.run\n"
        ),
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text, encoding="utf-8")
    found = {(i.importer, i.target, i.where, i.line) for i in all_imports(tmp_path)}
    assert found == {
        ("mimesisbench.run.worker", "mimesisbench.errors", "module level", 1),
        ("mimesisbench.engine.local", "mimesisbench", "module level", 2),
        ("mimesisbench.engine.local", "mimesisbench.run.worker", "under TYPE_CHECKING", 4),
        ("mimesisbench.engine.local", "mimesisbench.run", "in a function", 6),
    }
    assert cycles([], [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]) == [["a", "b", "c"]]


# ---------------------------------------------------------------------------------- as a script


def render(show_modules: bool = False) -> str:
    imports = all_imports()
    edges = package_edges(imports)
    layer = layer_index()
    out = [f"import graph of {SRC / TOP} (layers bottom to top; a package imports only lower layers)"]
    for i, packages in enumerate(LAYERS):
        out.append(f"layer {i}:")
        for pkg in packages:
            targets = sorted({b for (a, b) in edges if a == pkg}, key=lambda p: (-layer.get(p, -1), p))
            out.append(f"  {pkg:<12} -> {', '.join(targets) if targets else '(nothing)'}")
    undeclared = sorted({package_of(m) for m in module_files()} - set(layer))
    if undeclared:
        out.append(f"not in LAYERS: {', '.join(undeclared)}")
    if show_modules:
        out.append("module arrows (importer -> imported, where):")
        for imp in sorted(imports, key=lambda i: (i.importer, i.line)):
            out.append(f"  {imp.importer} -> {imp.target}  [{imp.at()}, {imp.where}]")
    found = cycles(layer, edges)
    out += [_cycle_report(c, edges) for c in found] or ["no cycle between packages"]
    return "\n".join(out)


if __name__ == "__main__":
    print(render(show_modules="--modules" in sys.argv[1:]))
