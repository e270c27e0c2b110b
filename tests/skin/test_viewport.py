"""The viewport's per-object path, headless: what ``viewport.draw_object`` draws into an offscreen target
lies where the numpy core puts the hybrid-skinned vertices, for every factor mode, and factor changes
reuse the per-bind GPU data.

RobotExpressive's skinned parts go through ``bpy.ops.hybrid_skin.add()`` like a user's; each part is
framed on its own (``framing.frame_bounds``) and drawn alone into a 160² RGBA32F target. A vertex
counts as drawn when a pixel of the 3×3 block around its projection is covered (a vertex sits on triangle
corners, which the rasteriser's pixel-centre rule may leave uncovered); the drawn area's bounding box
must equal the projected vertices' to 1.5 pixels.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import bpy
import numpy as np
import pytest

from tests.support.assets import clip_action, import_gltf, play

pytestmark = pytest.mark.gpu

SIZE = 160
BOX_TOL = 1.5  # pixels


@pytest.fixture
def hs(addon, gpu_context) -> SimpleNamespace:
    name = addon.__name__
    modules = ("skin.viewport", "rig.bind", "api", "runtime", "draw.framing", "rig.state")
    namespace = {m.split(".")[-1]: importlib.import_module(f"{name}.{m}") for m in modules}
    namespace["rig_state"] = namespace.pop("state")
    return SimpleNamespace(**namespace)


@pytest.fixture
def robot(hs, assets):
    """RobotExpressive mid-punch with Hybrid Skin (GPU display) on every skinned part."""
    arm, skinned = import_gltf(assets / "RobotExpressive.glb")
    play(arm, clip_action("Punch"), 12.0)
    for obj in skinned:
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.hybrid_skin.add(display="GPU") == {"FINISHED"}
        assert obj.hybrid_skin.display == "GPU"
    yield arm, skinned
    hs.viewport.forget()


def expected_pixels(hs, obj) -> tuple[np.ndarray, np.ndarray]:
    """The view framing ``obj``'s CPU hybrid result, and where its vertices project to (pixels)."""
    local = hs.api.deformed_positions(obj).astype(np.float64)  # the object's own factor settings
    matrix = np.array(obj.matrix_world)
    world = local @ matrix[:3, :3].T + matrix[:3, 3]
    view_projection = hs.framing.frame_bounds(world, 1.0)
    clip = np.c_[world, np.ones(len(world))] @ view_projection.T
    return view_projection, (clip[:, :2] / clip[:, 3:] + 1.0) / 2.0 * SIZE


def draw(hs, obj, view_projection):
    """``draw_object`` into a fresh offscreen target; (GpuSkin or None, covered-pixel mask)."""
    import gpu

    pixels = np.zeros((SIZE, SIZE, 4), dtype=np.float32)
    offscreen = gpu.types.GPUOffScreen(SIZE, SIZE, format="RGBA32F")
    try:
        with offscreen.bind():
            framebuffer = gpu.state.active_framebuffer_get()
            framebuffer.clear(color=(0.0, 0.0, 0.0, 0.0), depth=1.0)
            depsgraph = bpy.context.evaluated_depsgraph_get()
            skin = hs.viewport.draw_object(obj, depsgraph, view_projection, bpy.context.view_layer)
            framebuffer.read_color(0, 0, SIZE, SIZE, 4, 0, "FLOAT",
                                   data=gpu.types.Buffer("FLOAT", pixels.shape, pixels))
    finally:
        offscreen.free()
    return skin, pixels[..., 3] > 0.5


def assert_drawn_where_the_core_puts_it(hs, obj):
    view_projection, expected = expected_pixels(hs, obj)
    skin, covered = draw(hs, obj, view_projection)
    assert skin is not None, f"{obj.name} was not drawn"
    near = covered.copy()  # a vertex is drawn when its 3x3 pixel block is
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            near |= np.roll(covered, (dy, dx), axis=(0, 1))
    col, row = np.clip(np.floor(expected).astype(int), 0, SIZE - 1).T
    missed = np.flatnonzero(~near[row, col])
    assert missed.size == 0, f"{obj.name}: {missed.size} of {len(expected)} vertices fall on empty pixels"
    rows, cols = np.flatnonzero(covered.any(axis=1)), np.flatnonzero(covered.any(axis=0))
    drawn = np.array([[cols.min(), rows.min()], [cols.max() + 1, rows.max() + 1]], dtype=np.float64)
    np.testing.assert_allclose(drawn, [expected.min(axis=0), expected.max(axis=0)], atol=BOX_TOL)
    return skin


def static_buffers(skin) -> tuple:
    """The per-bind GPU objects (and the factor map buffer) of a ``GpuSkin``."""
    return (skin._influences, skin._corner_buffer, skin._index_buffer, skin._corner_factors, skin._batch)


def test_every_part_is_drawn_where_the_core_puts_it(hs, robot):
    arm, skinned = robot
    for obj in skinned:
        skin = assert_drawn_where_the_core_puts_it(hs, obj)
        assert skin.vertex_count == len(obj.data.vertices) and not skin.auto_factor
        assert hs.viewport.viewport_state().shown[obj.session_uid].update_ms > 0.0
    play(arm, clip_action("Punch"), 20.0)  # another frame: new pose, same GPU data
    for obj in skinned:
        shown = hs.viewport.viewport_state().shown[obj.session_uid]
        before = static_buffers(shown.skin)
        assert assert_drawn_where_the_core_puts_it(hs, obj) is shown.skin
        assert static_buffers(shown.skin) == before


def test_hidden_object_draws_nothing(hs, robot):
    _, skinned = robot
    obj = skinned[0]
    view_projection, _ = expected_pixels(hs, obj)
    assert draw(hs, obj, view_projection)[1].any()
    obj.hide_set(True)
    skin, covered = draw(hs, obj, view_projection)
    assert skin is None and not covered.any()
    obj.hide_set(False)
    obj.hybrid_skin.display = "EVALUATED"  # the Evaluated display is Blender's own drawing, not the add-on's
    skin, covered = draw(hs, obj, view_projection)
    assert skin is None and not covered.any()


def test_global_slider_changes_only_a_uniform(hs, robot):
    _, skinned = robot
    obj = skinned[1]
    skin = assert_drawn_where_the_core_puts_it(hs, obj)
    before = static_buffers(skin)
    for factor in (0.0, 1.0, 0.8):
        obj.hybrid_skin.deform_factor = factor
        assert assert_drawn_where_the_core_puts_it(hs, obj) is skin
        assert skin.deform_factor == pytest.approx(factor) and static_buffers(skin) == before


def test_vertex_group_map_is_uploaded_once_per_bind(hs, robot):
    _, skinned = robot
    obj = skinned[0]
    weights = np.zeros(len(obj.vertex_groups))
    for v in obj.data.vertices:
        for g in v.groups:
            weights[g.group] += g.weight
    obj.hybrid_skin.factor_vertex_group = obj.vertex_groups[int(weights.argmax())].name
    obj.hybrid_skin.factor_mode = "VERTEX_GROUP"
    skin = assert_drawn_where_the_core_puts_it(hs, obj)
    assert skin._factor_map_mix == 1.0 and 0.0 < skin._factor_map.mean() < 1.0
    before = static_buffers(skin)  # the factor map buffer included
    obj.hybrid_skin.deform_factor = 0.9
    assert assert_drawn_where_the_core_puts_it(hs, obj) is skin and static_buffers(skin) == before
    obj.hybrid_skin.factor_mode = "GLOBAL"
    obj.hybrid_skin.factor_mode = "VERTEX_GROUP"  # back: the map is still on the GPU
    assert assert_drawn_where_the_core_puts_it(hs, obj) is skin and static_buffers(skin) == before


def test_auto_factor_is_the_shader_mode(hs, robot):
    arm, skinned = robot
    for obj in skinned:
        obj.hybrid_skin.factor_mode = "AUTO"
        skin = assert_drawn_where_the_core_puts_it(hs, obj)
        assert skin.auto_factor
        before = static_buffers(skin)
        play(arm, clip_action("Wave"), 9.0)
        assert assert_drawn_where_the_core_puts_it(hs, obj) is skin and static_buffers(skin) == before


def test_animated_shape_key_refreshes_the_rest_input(hs, robot):
    """A rest input that animates (shape keys) is re-read per frame; the GPU follows it."""
    _, skinned = robot
    obj = skinned[1]
    obj.hybrid_skin.enabled = False
    obj.shape_key_add(name="Basis")
    key = obj.shape_key_add(name="Swell", from_mix=False)
    co = np.empty(3 * len(obj.data.vertices), dtype=np.float32)
    key.data.foreach_get("co", co)
    co = co.reshape(-1, 3)
    key.data.foreach_set("co", (co + 0.3 * (co - co.mean(axis=0))).ravel())
    key.value = 0.0
    obj.hybrid_skin.enabled = True
    skin = assert_drawn_where_the_core_puts_it(hs, obj)
    before = static_buffers(skin)
    view_projection, _ = expected_pixels(hs, obj)
    key.value = 1.0
    hs.rig_state.rig_state().bump()  # what the depsgraph handler does in the UI
    assert draw(hs, obj, view_projection)[0] is skin  # the viewport re-reads the rest input itself...
    assert skin._corner_buffer is not before[1]  # ... and uploads the new rest shape
    assert assert_drawn_where_the_core_puts_it(hs, obj) is skin


def test_plain_redraw_skips_the_bind_check_until_the_scene_changes(hs, robot, monkeypatch):
    """A redraw (orbiting the view) costs no Python walk over bones; any scene change re-checks."""
    arm, skinned = robot
    obj = skinned[0]
    view_projection, _ = expected_pixels(hs, obj)
    draw(hs, obj, view_projection)
    calls = []
    real = hs.bind.cached_bind
    monkeypatch.setattr(hs.bind, "cached_bind", lambda *a, **k: calls.append(1) or real(*a, **k))
    for _ in range(3):
        skin, covered = draw(hs, obj, view_projection)
        assert covered.any()
    assert calls == []
    hs.rig_state.rig_state().bump()  # what the depsgraph and frame-change handlers do
    draw(hs, obj, view_projection)
    assert calls == [1]
