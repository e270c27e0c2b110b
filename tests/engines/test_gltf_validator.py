"""Every glTF the bake exports passes the Khronos glTF Validator and loads in three.js and Babylon.js quietly.

The validator is the reference implementation (npm ``gltf-validator``, pinned in
``tests/engines/package-lock.json``), run by ``validate_gltf.mjs`` on the bake's own ``.glb`` files:
every rig in ``assets/`` (one clip each) and the test rigs built here (the tentacle and box of
``tests/animtex/tentacle.py``: mesh units half the scene's, a hard-edged box; the flat boxes and custom
normals of ``tests/support/hard_edges.py``; the tentacle in factor mode Auto, whose bone kinds carry
``_ANIMTEX_AUTO_REST``; CesiumMan with the Tangents option, whose exports carry ``TANGENT``), each baked as
every kind at every precision (CesiumMan with tangents: each kind at PNG16; the ``.glb`` depends on both:
the texel UV map on the texture's size, the skin on the kind). Every file must report **0 errors and 0
warnings**. Infos and hints are allowed only as :data:`ALLOWED_INFOS` names them, one by one, with why.

The same files are then loaded in headless Chromium by three.js's ``GLTFLoader`` (and drawn) and by
Babylon.js's glTF loader (and a frame rendered): no console warning or error from either, and each loader
made what the file holds (every mesh; bone kinds skinned, with exactly the palette's bones).
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
from pathlib import Path

import bpy
import pytest

from tests.animtex.tentacle import tentacle_scene
from tests.support.assets import armature_actions, import_gltf
from tests.support.blender import reset_to_empty_scene
from tests.support.hard_edges import hard_scene

ENGINES_DIR = Path(__file__).resolve().parent
KINDS = ("VERTEX", "BONE_MATRIX", "BONE_DQ")
PRECISIONS = ("PNG8", "PNG16", "EXR16", "EXR32")
ASSETS = ("RobotExpressive.glb", "CesiumMan.gltf", "RiggedFigure.gltf")
#: Validator findings that are not errors or warnings and are expected, by (code, what they point at):
#: ``UNUSED_OBJECT`` (info) on a ``TEXCOORD_n``: a UV map no material samples. A VERTEX bake's texel UV
#: map is read by the runtime's vertex shader, not by a material (shaders/FORMAT.md section 7), and
#: Blender's exporter keeps a mesh's own UV maps (the test rigs', and CesiumMan's second) whether or not
#: a material uses them. ``UNUSED_MESH_TANGENT`` (info) on ``TANGENT``: the Tangents option exports them
#: for the normal map an engine's material will use, whether or not the Blender material has one.
#: Nothing else is allowed, infos and hints included.
ALLOWED_INFOS = {("UNUSED_OBJECT", "TEXCOORD"), ("UNUSED_MESH_TANGENT", "TANGENT")}


def _asset(assets: Path, name: str):
    arm, _ = import_gltf(assets / name)
    return arm, [armature_actions()[0].name], None


#: Rigs baked with the Tangents option too (at one precision: tangents do not depend on it).
WITH_TANGENTS = {"cesiumman_tangents": "CesiumMan.gltf"}
#: Rigs whose bone bakes also write the instancing mesh (``<name>_instancing.glb``).
WITH_INSTANCING = ("tentacle_auto", "cesiumman_tangents")


def _tentacle(factor_mode: str | None = None):
    arm, _, actions = tentacle_scene()
    return arm, actions, factor_mode


def _hard():
    arm, _ = hard_scene()
    return arm, [arm.animation_data.action.name], None


def rigs(assets: Path) -> dict:
    """Name → a function building the rig in an empty scene: ``(armature, action names, factor mode)``."""
    out = {name.split(".")[0]: (lambda n=name: _asset(assets, n)) for name in ASSETS}
    out["tentacle"] = _tentacle
    out["hard_edges"] = _hard
    out["tentacle_auto"] = lambda: _tentacle("AUTO")
    out.update({rig: (lambda n=name: _asset(assets, n)) for rig, name in WITH_TANGENTS.items()})
    return out


@pytest.fixture(scope="module")
def exports(addon, assets, page_server) -> dict[str, Path]:
    """``<rig>_<kind>_<precision>`` → the bake's ``.glb`` (in the page server's folder)."""
    bake = importlib.import_module(addon.__name__ + ".animtex.bake")
    options = importlib.import_module(addon.__name__ + ".animtex.options")
    out = {}
    (page_server.data_dir / "gltf").mkdir()
    for rig, build in rigs(assets).items():
        reset_to_empty_scene()
        arm, actions, mode = build()
        kinds = KINDS[1:] if mode == "AUTO" else KINDS
        tangents = rig in WITH_TANGENTS
        instancing = rig in WITH_INSTANCING
        for kind in kinds:
            for precision in PRECISIONS[1:2] if tangents else PRECISIONS:
                name = f"{rig}_{kind}_{precision}".lower()
                opts = options.BakeOptions(
                    directory=str(page_server.data_dir / "gltf"), file_name=name, kind=kind,
                    precision=precision, frame_step=4.0, export_gltf=True, factor_mode=mode,
                    tangents=tangents, export_instancing=instancing and kind != "VERTEX",
                )  # fmt: skip
                result = bake.bake(bpy.context, arm, opts, actions)
                out[name] = Path(result.gltf_path)
                if opts.export_instancing:  # the static mesh with the bone data in UV channels
                    out[name + "_instancing"] = out[name].with_name(name + "_instancing.glb")
    reset_to_empty_scene()
    return out


def validate(paths: list[Path]) -> dict:
    node = shutil.which("node")
    assert node, "node is needed for the glTF validator (make test-engines)"
    done = subprocess.run(
        [node, str(ENGINES_DIR / "validate_gltf.mjs"), *map(str, paths)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _allowed(message: dict) -> bool:
    pointer = message["pointer"] or ""
    return any(message["code"] == code and where in pointer for code, where in ALLOWED_INFOS)


def test_validator_reports_no_error_and_no_warning(exports):
    report = validate(list(exports.values()))
    assert report["version"] == "2.0.0-dev.3.10"  # the pinned validator ran
    assert len(report["files"]) == len(exports) == 3 * 12 + 12 + 12 + (8 + 8) + (3 + 2)
    found = {}
    for entry in report["files"]:
        name = Path(entry["path"]).stem
        assert (entry["errors"], entry["warnings"]) == (0, 0), (name, entry["messages"])
        unexpected = [m for m in entry["messages"] if not _allowed(m)]
        assert not unexpected, (name, unexpected)
        for m in entry["messages"]:
            found.setdefault(m["code"], set()).add(name.split("_")[-2 - name.endswith("_instancing")])
    print(f"validator {report['version']}: {len(exports)} files, 0 errors, 0 warnings; allowed: {found}")


def test_loaders_load_every_export_without_a_warning(exports, page_server):
    files = {name: f"/data/gltf/{path.name}" for name, path in exports.items()}
    result = page_server.run_page("loaders.html", {"files": list(files.values())}, timeout=900)
    by_url = {entry["url"]: entry for entry in result["files"]}
    for name, url in files.items():
        entry = by_url[url]
        for loader in ("three", "babylon"):
            got = entry[loader]
            assert got["messages"] == [], (name, loader, got["messages"])
            assert got["meshes"] >= 1, (name, loader)
            skinned = "_bone_" in name and not name.endswith("_instancing")  # the instancing mesh is static
            assert (got["skinned"] == got["meshes"]) if skinned else got["skinned"] == 0, (name, loader, got)
    meta = {}
    for name, path in exports.items():
        if "_bone_" in name and not name.endswith("_instancing"):
            meta[name] = len(json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))["bones"])
            for loader in ("three", "babylon"):
                assert by_url[files[name]][loader]["bones"] == meta[name], (name, loader)
    versions = f"three.js r{result['three']}, Babylon.js {result['babylon']}"
    print(f"{versions}: {len(files)} files, no console warning")
