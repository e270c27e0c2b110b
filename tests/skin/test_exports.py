"""Issue 26 §1: Convert, ``new_from_object``, ray casts and exporters with modifiers applied get the posed
hybrid — what the viewport shows — from Blender's own evaluation (the Evaluated display, the default).

Truth: the add-on's API (``deformed_positions``, itself held to Blender's own mix elsewhere), taken before
the operation, or an intersection computed from it in numpy (ray casts). Each file is read back by an
independent reader (OBJ text, the spec-only glTF reader) or Blender's own importer (FBX, Alembic, USD).
"""

from __future__ import annotations

import addon_utils
import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import rig
from tests.robustness.helpers import activate, assert_close, modules
from tests.support.gltf import read_gltf
from tests.support.scenes import native_twin

FRAME = 6


@pytest.fixture
def posed(addon):
    """The rig at its bent and twisted frame, Hybrid Skin on (Evaluated, factor 0.6), and the world-space
    positions the API gives."""
    arm, body = rig()
    bpy.context.scene.frame_set(FRAME)
    local = addon.api.deformed_positions(body).astype(np.float64)
    matrix = np.array(body.matrix_world)
    world = local @ matrix[:3, :3].T + matrix[:3, 3]
    rest = np.array([v.co[:] for v in body.data.vertices])
    assert np.abs(local - rest).max() > 0.3, "the pose must move the mesh (or these tests are void)"
    return arm, body, world


def same_points(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    """As sets of points (an exporter may split vertices): each point of one lies on the other."""
    distance = np.sqrt(((got[:, None, :] - expected[None, :, :]) ** 2).sum(-1))
    far = max(distance.min(1).max(), distance.min(0).max())
    diag = float(np.linalg.norm(expected.max(0) - expected.min(0)))
    assert far <= 2e-5 * diag, f"{what}: a point {far:.2e} away ({far / diag:.1e} × diagonal)"


def _imported(before: set) -> bpy.types.Object:
    new = [o for o in bpy.data.objects if o not in before and o.type == "MESH"]
    assert len(new) == 1, [o.name for o in new]
    return new[0]


def _world(obj: bpy.types.Object) -> np.ndarray:
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    co = np.array([v.co[:] for v in evaluated.data.vertices], dtype=np.float64)
    matrix = np.array(evaluated.matrix_world)
    return co @ matrix[:3, :3].T + matrix[:3, 3]


# ---------------------------------------------------------------------------------------- Convert
@pytest.mark.parametrize("display", ["EVALUATED", "GPU"])
def test_convert_to_mesh_keeps_the_posed_hybrid_and_leaves_no_hybrid_skin(addon, posed, capfd, display):
    """Evaluated: Blender converts its own hybrid. GPU preview: Blender converts its evaluation, where the
    skinning is hidden; the handler then gives the new mesh the pose the preview drew."""
    arm, body, world = posed
    body.hybrid_skin.display = display
    if display == "GPU":
        assert modules(addon).setup.gpu_draws(body)
    activate(body)
    assert bpy.ops.object.convert(target="MESH") == {"FINISHED"}
    bpy.context.view_layer.update()
    assert_close(_world(body), world, "Convert ▸ Mesh")
    # Nothing of Hybrid Skin is left on what is now a plain mesh (it showed Bounds, enabled, no modifiers).
    assert not body.hybrid_skin.enabled and not body.hybrid_skin.saved_state
    assert len(body.modifiers) == 0 and body.display_type == "TEXTURED"
    assert body.vertex_groups.get("HybridSkin Factor") is None
    assert capfd.readouterr().out.count("no longer has the Armature modifier Hybrid Skin followed") == 1


def test_new_from_object_gets_the_posed_hybrid(addon, posed):
    arm, body, world = posed
    depsgraph = bpy.context.evaluated_depsgraph_get()
    mesh = bpy.data.meshes.new_from_object(body.evaluated_get(depsgraph))
    co = np.array([v.co[:] for v in mesh.vertices])
    matrix = np.array(body.matrix_world)
    assert_close(co @ matrix[:3, :3].T + matrix[:3, 3], world, "new_from_object")


# --------------------------------------------------------------------------------------- ray casts
def _ray_hit(points: np.ndarray, triangles: np.ndarray, origin, direction) -> np.ndarray:
    """Nearest intersection of a ray with triangles (Möller–Trumbore), in numpy."""
    a, b, c = (points[triangles[:, i]] for i in range(3))
    e1, e2 = b - a, c - a
    p = np.cross(direction, e2)
    det = (e1 * p).sum(1)
    ok = np.abs(det) > 1e-12
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = origin - a
    u = (s * p).sum(1) * inv
    q = np.cross(s, e1)
    v = (q * direction).sum(1) * inv
    t = (e2 * q).sum(1) * inv
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0)
    assert hit.any(), "the ray must hit the mesh (or the test is void)"
    return origin + direction * t[hit].min()


def test_scene_ray_cast_hits_the_posed_hybrid(addon, posed):
    arm, body, world = posed
    body.data.calc_loop_triangles()
    triangles = np.array([t.vertices[:] for t in body.data.loop_triangles])
    target = world[len(world) // 2 + 5]
    origin = target + np.array([2.0, 0.5, 0.3])
    direction = (target - origin) / np.linalg.norm(target - origin)
    expected = _ray_hit(world, triangles, origin, direction)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    found, location, *_rest, hit_object, _matrix = bpy.context.scene.ray_cast(depsgraph, origin, direction)
    assert found and hit_object.original == body
    assert np.linalg.norm(np.array(location) - expected) < 1e-4


# ---------------------------------------------------------------------------------------- exports
def test_obj_export_with_modifiers_applied(addon, posed, tmp_path):
    arm, body, world = posed
    activate(body)
    path = tmp_path / "body.obj"
    assert bpy.ops.wm.obj_export(
        filepath=str(path), export_selected_objects=True, apply_modifiers=True,
        forward_axis="Y", up_axis="Z", export_materials=False,
    ) == {"FINISHED"}
    rows = [line.split()[1:4] for line in path.read_text().splitlines() if line.startswith("v ")]
    assert_close(np.array(rows, dtype=np.float64), world, "OBJ export")


def test_fbx_export_with_modifiers_applied(addon, posed, tmp_path):
    arm, body, world = posed
    addon_utils.enable("io_scene_fbx")
    activate(body)
    path = tmp_path / "body.fbx"
    assert bpy.ops.export_scene.fbx(
        filepath=str(path), use_selection=True, object_types={"MESH"}, use_mesh_modifiers=True,
        bake_anim=False,
    ) == {"FINISHED"}
    before = set(bpy.data.objects)
    assert bpy.ops.import_scene.fbx(filepath=str(path)) == {"FINISHED"}
    same_points(_world(_imported(before)), world, "FBX export")


def _gltf_points(obj: bpy.types.Object, path) -> np.ndarray:
    activate(obj)
    assert bpy.ops.export_scene.gltf(
        filepath=str(path), use_selection=True, export_apply=True, export_yup=False, export_skins=False,
        export_animations=False, export_morph=False,
    ) == {"FINISHED"}
    (primitive,) = read_gltf(path).values()
    local = primitive["POSITION"].astype(np.float64)
    matrix = np.array(obj.matrix_world)
    return local @ matrix[:3, :3].T + matrix[:3, 3]


def test_gltf_export_with_modifiers_applied_is_what_blender_alone_writes(addon, posed, tmp_path):
    """glTF's Apply Modifiers leaves Armature modifiers out (a skinned mesh is exported at rest, its pose
    in the skin): the file holds what Blender alone writes for the same mesh."""
    arm, body, world = posed
    ours = _gltf_points(body, tmp_path / "ours.glb")
    with native_twin(body, 0.6) as twin:
        theirs = _gltf_points(twin, tmp_path / "theirs.glb")
    same_points(ours, theirs, "glTF export")


@pytest.mark.parametrize("mode", ["RENDER", "VIEWPORT"])
def test_alembic_export(addon, posed, tmp_path, mode):
    arm, body, world = posed
    activate(body)
    path = tmp_path / "body.abc"
    assert bpy.ops.wm.alembic_export(
        filepath=str(path), selected=True, start=FRAME, end=FRAME, evaluation_mode=mode
    ) == {"FINISHED"}
    before = set(bpy.data.objects)
    assert bpy.ops.wm.alembic_import(filepath=str(path)) == {"FINISHED"}
    bpy.context.scene.frame_set(FRAME)
    same_points(_world(_imported(before)), world, f"Alembic export ({mode})")


@pytest.mark.parametrize("mode", ["RENDER", "VIEWPORT"])
def test_usd_export(addon, posed, tmp_path, mode):
    arm, body, world = posed
    activate(body)
    path = tmp_path / "body.usda"
    assert bpy.ops.wm.usd_export(
        filepath=str(path), selected_objects_only=True, export_animation=False, evaluation_mode=mode,
        export_materials=False, export_armatures=False,
    ) == {"FINISHED"}
    before = set(bpy.data.objects)
    assert bpy.ops.wm.usd_import(filepath=str(path)) == {"FINISHED"}
    same_points(_world(_imported(before)), world, f"USD export ({mode})")


def test_renders_see_the_hybrid_with_the_gpu_preview(addon, tmp_path):
    """The GPU preview hides Blender's hybrid in the viewport only: what a render, or an exporter that
    evaluates for render (Alembic's and USD's default), reads is Blender's exact hybrid."""
    hs = modules(addon)
    arm, body = rig(display="GPU")
    bpy.context.scene.frame_set(FRAME)
    assert hs.setup.gpu_draws(body) and all(m.show_render for m in body.modifiers)
    local = addon.api.deformed_positions(body).astype(np.float64)
    matrix = np.array(body.matrix_world)
    world = local @ matrix[:3, :3].T + matrix[:3, 3]
    path = tmp_path / "render.abc"
    assert bpy.ops.wm.alembic_export(
        filepath=str(path), selected=True, start=FRAME, end=FRAME, evaluation_mode="RENDER"
    ) == {"FINISHED"}
    before = set(bpy.data.objects)
    assert bpy.ops.wm.alembic_import(filepath=str(path)) == {"FINISHED"}
    bpy.context.scene.frame_set(FRAME)
    same_points(_world(_imported(before)), world, "render evaluation with the GPU preview drawing")
