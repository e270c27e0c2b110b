"""The package's shape, checked statically (ast, nothing imported): imports point one way, UI → glue →
core, with no cycle anywhere; and the only module-level state is the runtime's.

Modules are files of ``hybrid_skin/``; an import names the module it loads (``from . import bind`` is
``hybrid_skin.skin.bind``, ``from ..bridge import x`` is ``hybrid_skin.bridge``). Every import counts,
also inside functions (a lazy import must not hide a cycle), except those under ``if TYPE_CHECKING:``.
UI modules are the ones ``hybrid_skin.FEATURES`` registers; entry points (the package's register, the
command line) may import anything; core is ``hybrid_skin.core``.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "hybrid_skin"

#: Module-level state allowed outside the runtime, and why.
STATE_ALLOWED = {
    "hybrid_skin.runtime": "the runtime itself: the one reference to the session's state",
    # The numpy core's worker pool lives with the kernels (core/skinning.py belongs to the kernel work);
    # runtime.stop() shuts it down at unregister, and it restarts on demand.
    "hybrid_skin.core.skinning": "the core's thread pool, shut down by runtime.stop()",
}
MUTATORS = {"append", "extend", "insert", "add", "update", "setdefault", "pop", "popitem", "clear", "remove"}
MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque"}


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name → file, for every ``.py`` under ``root`` (a package folder)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside ``if TYPE_CHECKING:`` blocks."""
    hidden = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            hidden.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return hidden


def imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that module ``name`` imports (see the module docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                base = ".".join([*base, node.module] if node.module else base)
            else:
                base = node.module or ""
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in modules and t != name)
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = module_files(root)
    return {name: imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of modules that import each other (Tarjan), as sorted lists."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1 or v in graph[v]:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def ui_modules(root: Path) -> set[str]:
    """The modules ``FEATURES`` in the package's ``__init__`` registers."""
    tree = ast.parse((root / "__init__.py").read_text(encoding="utf-8"))
    features = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "FEATURES" for t in node.targets)
    )
    return {f"{root.name}.{feature}.{name}" for feature, names in features for name in names}


def module_state(path: Path) -> list[str]:
    """Module-level mutable state in one file: ``global`` rebinding, mutable containers bound to names
    that are not CONSTANT_CASE, and constant containers mutated in the module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    problems = [
        f"line {n.lineno}: global {', '.join(n.names)}" for n in ast.walk(tree) if isinstance(n, ast.Global)
    ]
    constants = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        mutable = isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp)
        call = value.func if isinstance(value, ast.Call) else None
        mutable |= getattr(call, "id", getattr(call, "attr", None)) in MUTABLE_CALLS
        for target in targets:
            name = getattr(target, "id", None)
            if not mutable or name is None or name == "__all__":
                continue
            if name.lstrip("_").isupper():
                constants.add(name)
            else:
                problems.append(f"line {node.lineno}: module-level mutable {name!r}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            if getattr(node.func.value, "id", None) in constants:
                problems.append(
                    f"line {node.lineno}: {node.func.value.id}.{node.func.attr}() changes a constant"
                )
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else []
        for target in targets:
            if isinstance(target, ast.Subscript) and getattr(target.value, "id", None) in constants:
                problems.append(f"line {node.lineno}: {target.value.id}[...] changes a constant")
    return problems


# ----------------------------------------------------------------------------------------- the package
def test_no_import_cycle_in_the_package():
    assert cycles(import_graph(PACKAGE)) == []


def test_imports_point_from_ui_to_glue_to_core():
    graph = import_graph(PACKAGE)
    ui = ui_modules(PACKAGE)
    assert ui and ui <= graph.keys(), "FEATURES names modules that do not exist"
    core = {m for m in graph if m == "hybrid_skin.core" or m.startswith("hybrid_skin.core.")}
    wrong = {m: sorted(graph[m] - core) for m in core if graph[m] - core}
    assert not wrong, f"core modules import outside core: {wrong}"
    entry = {
        m for m in graph if m in ("hybrid_skin", "hybrid_skin.__main__") or m.startswith("hybrid_skin.cli")
    }
    upward = {m: sorted(graph[m] & ui) for m in graph.keys() - ui - entry if graph[m] & ui}
    assert not upward, f"glue or core modules import UI modules: {upward}"


def test_the_core_imports_no_blender_module():
    blender = {"bpy", "bmesh", "mathutils", "gpu", "blf", "bpy_extras", "addon_utils"}
    for name, path in module_files(PACKAGE / "core").items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        used = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        used |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not used & blender, f"{name} imports {sorted(used & blender)}"


def test_feature_packages_import_nothing_when_imported():
    """Importing ``hybrid_skin.skin.bind`` runs ``hybrid_skin/skin/__init__.py`` first: feature package
    inits stay empty, so loading one module never pulls in another feature's UI (or a cycle)."""
    for feature in ("skin", "bake", "analyze", "animtex"):
        tree = ast.parse((PACKAGE / feature / "__init__.py").read_text(encoding="utf-8"))
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)], feature


def test_no_module_level_state_outside_the_runtime():
    found = {}
    for name, path in module_files(PACKAGE).items():
        problems = module_state(path)
        if problems and name not in STATE_ALLOWED:
            found[name] = problems
    assert not found, f"module-level state belongs in hybrid_skin.runtime: {found}"
    for name in STATE_ALLOWED:  # each exception is still needed (else drop it)
        assert module_state(module_files(PACKAGE)[name]), name


# ------------------------------------------------------------------------------ the checks themselves
def write_package(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / "pkg" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root / "pkg"


def test_the_checks_find_a_hidden_cycle_and_a_cache(tmp_path):
    package = write_package(
        tmp_path,
        {
            "__init__.py": "FEATURES = (('ui', ('panel',)),)\n",
            "ui/__init__.py": "",
            "ui/panel.py": "from ..glue import a\n",
            "glue/__init__.py": "",
            "glue/a.py": "from . import b\n_cache = {}\nlisteners: list = []\n",
            "glue/b.py": "def later():\n    from .a import _cache  # lazy: hides the cycle\n",
            "glue/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..ui import panel\n",
            "glue/d.py": "from ..ui.panel import x\nTABLE = {}\nTABLE['k'] = 1\ndef f():\n    global y\n",
        },
    )
    graph = import_graph(package)
    assert cycles(graph) == [["pkg.glue.a", "pkg.glue.b"]]
    assert graph["pkg.glue.c"] == set()  # TYPE_CHECKING imports are types only
    assert ui_modules(package) == {"pkg.ui.panel"}
    assert graph["pkg.glue.d"] & ui_modules(package) == {"pkg.ui.panel"}
    assert [p.split(": ")[1] for p in module_state(package / "glue" / "a.py")] == [
        "module-level mutable '_cache'",
        "module-level mutable 'listeners'",
    ]
    assert len(module_state(package / "glue" / "d.py")) == 2  # a mutated constant, a global


def test_the_graph_sees_the_imports_of_real_modules():
    """Control: the resolver finds what these modules really import (else an empty graph would pass)."""
    graph = import_graph(PACKAGE)
    assert {"hybrid_skin.bridge", "hybrid_skin.runtime", "hybrid_skin.core.binding"} <= graph[
        "hybrid_skin.skin.bind"
    ]
    assert {"hybrid_skin.skin.bind", "hybrid_skin.factor"} <= graph["hybrid_skin.draw.comparison"]
    assert (
        "hybrid_skin.core.animtex.verify" in graph["hybrid_skin.animtex.bake"]
    )  # from ..core.animtex import verify
