"""The code layout's measures: import circles and imports of another package's private module per
package, hosting's top-level modules, hosting modules that read the stored session document's wire
keys by hand, and `Any` in product code.

Usage: .venv/bin/python bench/layout_measures.py [ROOT]   (ROOT: a checkout, default this one)

* Import circles: the strongly connected components of more than one module in each package's
  import graph, counting every import: module level, function-local and under `TYPE_CHECKING`.
  `import a.b.c` (or `from a.b import c`) also runs the packages `a.b` and `a`, so an import
  reaches the named module and each enclosing package that is not already one of the importer's
  own (those are initialised before the importer runs).
* Private imports: imports of a private module (a name starting with one underscore) from
  outside the package that holds it. Such a module is for its own package and that package's
  subpackages (`hosting/a2a/_api.py` may import `hosting._ids`); any other module (a sibling
  subpackage, or the enclosing package's own modules) reaches it through its package's
  `__init__.py`. Every import counts, as for circles; each importing module and private module
  once.
* Wire keys: string constants naming the stored document's properties (below) used as a
  subscript, a `.get`/`.pop`/`.setdefault` key or a dict display key.
* `Any`: every `Any` name (or `typing.Any`) in state, agents, hosting, devhost, examples and
  function_app.py.
"""

from __future__ import annotations

import ast
import contextlib
import pathlib
import sys
from collections.abc import Iterator

PACKAGES = ("state", "agents", "hosting", "devhost")
PRODUCT = (*PACKAGES, "examples")
WIRE_KEYS = frozenset(
    {
        "conversationHistory", "$type", "schemaVersion", "stateBag", "runs", "discardedRuns",
        "refusedRuns", "deletedAt", "lastActivityAt", "serviceThreadId", "archive", "responseIndex",
        "requestIndex", "requestHash", "userId",
    }
)
_KEY_METHODS = frozenset({"get", "pop", "setdefault"})


def _modules(root: pathlib.Path, package: str) -> dict[str, pathlib.Path]:
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(module: str, path: pathlib.Path, tree: ast.AST) -> Iterator[tuple[str, list[str]]]:
    """Every import of `module`: the absolute module name and the names a `from` import takes."""
    is_package = path.name == "__init__.py"
    base = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                target = ".".join(anchor + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, [alias.name for alias in node.names]


def import_graph(root: pathlib.Path, package: str) -> dict[str, set[str]]:
    modules = _modules(root, package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for target, names in _imported(name, path, tree):
            reached = {f"{target}.{n}" for n in names if f"{target}.{n}" in modules}
            if len(reached) < len(names) or not names:
                reached.add(target)  # a name defined by the module (or package) itself
            parts = target.split(".")
            # The enclosing packages run first, unless they are the importer's own.
            reached |= {".".join(parts[:i]) for i in range(1, len(parts))} - own
            graph[name] |= {m for m in reached if m in modules and m != name}
    return graph


def private_imports(root: pathlib.Path, package: str) -> list[str]:
    """`importer -> private module` for each module of `package` that imports a private module
    of a package other than its own or one enclosing it."""
    modules = {name: path for pkg in PACKAGES for name, path in _modules(root, pkg).items()}
    found = set()
    for name, path in _modules(root, package).items():
        own = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for target, names in _imported(name, path, tree):
            if target.split(".")[0] not in PACKAGES:
                continue
            # `from a import _b` imports the module a._b when there is one
            for reached in [target] + [f"{target}.{n}" for n in names if f"{target}.{n}" in modules]:
                parts = reached.split(".")
                private = next(
                    (i for i, p in enumerate(parts) if p.startswith("_") and not p.startswith("__")), None
                )
                if private is None:
                    continue
                holder = ".".join(parts[:private])
                if own != holder and not own.startswith(holder + "."):
                    found.add(f"{name} -> {'.'.join(parts[: private + 1])}")
    return sorted(found)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def wire_key_uses(tree: ast.AST) -> int:
    count = 0
    for node in ast.walk(tree):
        keys: list[ast.expr] = []
        if isinstance(node, ast.Subscript):
            keys = [node.slice]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            if node.func.attr in _KEY_METHODS:
                keys = [node.args[0]]
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None]
        count += sum(1 for k in keys if isinstance(k, ast.Constant) and k.value in WIRE_KEYS)
    return count


def _any_count(tree: ast.AST) -> int:
    count = 0
    for node in ast.walk(tree):
        if (isinstance(node, ast.Name) and node.id == "Any") or (
            isinstance(node, ast.Attribute) and node.attr == "Any"
        ):
            count += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "Any" in node.value:
            # An annotation written as a string ("dict[str, Any]") counts too.
            with contextlib.suppress(SyntaxError):
                count += _any_count(ast.parse(node.value, mode="eval"))
    return count


def main(root: pathlib.Path) -> None:
    for package in PACKAGES:
        found = circles(import_graph(root, package))
        print(f"import circles in {package}/: {len(found)}")
        for component in found:
            print("  " + " <-> ".join(component))
    for package in PACKAGES:
        found_imports = private_imports(root, package)
        print(f"private_imports in {package}/: {len(found_imports)}")
        for line in found_imports:
            print("  " + line)
    top = sorted(p.stem for p in (root / "hosting").glob("*.py") if p.name != "__init__.py")
    print(f"hosting top-level modules: {len(top)} ({', '.join(top)})")
    readers = {}
    for path in sorted((root / "hosting").rglob("*.py")):
        uses = wire_key_uses(ast.parse(path.read_text(encoding="utf-8")))
        if uses:
            readers[str(path.relative_to(root))] = uses
    detail = ", ".join(f"{name} ({n})" for name, n in readers.items())
    uses = sum(readers.values())
    print(f"hosting modules reading stored-document wire keys: {len(readers)} ({uses} uses): {detail}")
    files = [p for pkg in PRODUCT for p in sorted((root / pkg).rglob("*.py"))]
    files += [root / "function_app.py"]
    total = sum(_any_count(ast.parse(p.read_text(encoding="utf-8"))) for p in files if p.exists())
    by_package = {
        pkg: sum(_any_count(ast.parse(p.read_text(encoding="utf-8"))) for p in (root / pkg).rglob("*.py"))
        for pkg in PRODUCT
    }
    print(f"Any in product code: {total} ({', '.join(f'{k} {v}' for k, v in by_package.items())})")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
