"""The package's shape, checked statically (ast, nothing imported): layers whose imports point one way,
no feature importing another, no cycle anywhere; and the only module-level state is the runtime's.

Layers, bottom to top: ``core`` (numpy, no Blender) → base (``errors``, ``saved``, ``runtime``,
``operator_base``) → ``bridge`` (data in and out) → ``draw`` (the GPU layer: it knows no rig and no
feature) → ``rig`` (the shared foundation) → the features (``skin``, ``bake``, ``analyze``, ``animtex``) →
entry points (the package's register, the public ``api``, the menus that gather every feature's
operators, the command line). A module imports its own layer or lower ones; a feature never imports
another feature.

Modules are files of ``hybrid_skin/``; an import names the module it loads (``from . import bind`` is
``hybrid_skin.rig.bind``, ``from ..bridge import x`` is ``hybrid_skin.bridge``). Every import counts: inside
functions (a lazy import must not hide a cycle) and under ``if TYPE_CHECKING:`` (a type-only import is
still an arrow between rooms).
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


def imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that module ``name`` imports (see the module docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
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


#: Layers, bottom to top; a module's layer is the first whose prefix matches it (longest prefixes first).
LAYERS = (
    ("core", ("core",)),
    ("base", ("errors", "saved", "runtime", "operator_base")),
    ("bridge", ("bridge",)),
    ("draw", ("draw",)),
    ("rig", ("rig",)),
    ("features", ("skin", "bake", "analyze", "animtex")),
    ("entry", ("", "__main__", "api", "ui", "cli")),
)
FEATURE_PACKAGES = ("skin", "bake", "analyze", "animtex")


def layer_of(module: str, root: str = "hybrid_skin") -> tuple[int, str]:
    """``(layer index, room)`` of a module: the room is its top-level module or package."""
    rest = module[len(root) :].lstrip(".")
    room = rest.split(".")[0]
    for index, (_name, rooms) in enumerate(LAYERS):
        if room in rooms:
            return index, room
    raise AssertionError(f"{module} is in no layer: add its room to LAYERS")


def wrong_arrows(graph: dict[str, set[str]], root: str = "hybrid_skin") -> list[str]:
    """Every import that points up a layer, or from one feature package into another."""
    wrong = []
    for module, targets in graph.items():
        level, room = layer_of(module, root)
        for target in sorted(targets):
            target_level, target_room = layer_of(target, root)
            if target_level > level:
                up = f"{LAYERS[level][0]} → {LAYERS[target_level][0]}"
                wrong.append(f"{module} imports {target} (up: {up})")
            elif room in FEATURE_PACKAGES and target_room in FEATURE_PACKAGES and target_room != room:
                wrong.append(f"{module} imports {target} (one feature into another)")
    return wrong


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


def test_every_arrow_points_down_and_no_feature_imports_another():
    graph = import_graph(PACKAGE)
    assert ui_modules(PACKAGE) <= graph.keys(), "FEATURES names modules that do not exist"
    assert wrong_arrows(graph) == []


def test_the_gpu_layer_imports_no_rig_and_no_feature():
    """``draw/`` is what every feature draws with; the pictures a feature makes (Render Comparison) live
    in that feature. Said on its own, besides the layer order, so a reordering cannot undo it silently."""
    graph = import_graph(PACKAGE)
    drawn = {m for m in graph if m.startswith("hybrid_skin.draw")}
    assert drawn >= {"hybrid_skin.draw.resources", "hybrid_skin.draw.shaders", "hybrid_skin.draw.framing"}
    above = ("rig", "skin", "bake", "analyze", "animtex", "ui", "cli", "api")
    wrong = {
        m: sorted(t for t in graph[m] if t.split(".")[1] in above) for m in drawn
    }
    assert not any(wrong.values()), wrong
    assert "hybrid_skin.analyze.comparison" in graph  # Render Comparison is a feature's


def test_every_module_is_in_a_layer():
    for module in import_graph(PACKAGE):
        layer_of(module)


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


def test_the_checks_find_hidden_cycles_upward_arrows_and_a_cache(tmp_path):
    """The checks themselves, on a made-up package: a cycle hidden by a lazy import, one hidden by a
    TYPE_CHECKING import, an arrow up a layer, a feature importing another, module-level caches."""
    package = write_package(
        tmp_path,
        {
            "__init__.py": "FEATURES = (('skin', ('panel',)),)\n",
            "skin/__init__.py": "",
            "skin/panel.py": "from ..rig import a\nfrom ..bake import tool\n",
            "bake/__init__.py": "",
            "bake/tool.py": "",
            "rig/__init__.py": "",
            "rig/a.py": "from . import b\n_cache = {}\nlisteners: list = []\n",
            "rig/b.py": "def later():\n    from .a import _cache  # lazy: hides the cycle\n",
            "rig/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..skin import panel\n",
            "rig/d.py": "TABLE = {}\nTABLE['k'] = 1\ndef f():\n    global y\n",
            "runtime.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .rig import d\n",
        },
    )
    graph = import_graph(package)
    assert cycles(graph) == [["pkg.rig.a", "pkg.rig.b"]]
    assert graph["pkg.rig.c"] == {"pkg.skin.panel"}  # a type-only import is an arrow too
    assert ui_modules(package) == {"pkg.skin.panel"}
    assert wrong_arrows(graph, "pkg") == [
        "pkg.rig.c imports pkg.skin.panel (up: rig → features)",
        "pkg.runtime imports pkg.rig.d (up: base → rig)",
        "pkg.skin.panel imports pkg.bake.tool (one feature into another)",
    ]
    assert [p.split(": ")[1] for p in module_state(package / "rig" / "a.py")] == [
        "module-level mutable '_cache'",
        "module-level mutable 'listeners'",
    ]
    assert len(module_state(package / "rig" / "d.py")) == 2  # a mutated constant, a global


def test_the_graph_sees_the_imports_of_real_modules():
    """Control: the resolver finds what these modules really import (else an empty graph would pass)."""
    graph = import_graph(PACKAGE)
    assert {"hybrid_skin.bridge", "hybrid_skin.runtime", "hybrid_skin.core.binding"} <= graph[
        "hybrid_skin.rig.bind"
    ]
    assert {"hybrid_skin.rig.bind", "hybrid_skin.rig.factor"} <= graph["hybrid_skin.analyze.comparison"]
    assert "hybrid_skin.core.deform_factor" in graph["hybrid_skin.draw.resources"]
    assert "hybrid_skin.core.animtex.verify" in graph["hybrid_skin.animtex.bake"]  # from a package import
