"""hybrid_skin.render_comparison as a user calls it: a PNG whose panels differ where LBS and DQS differ."""

from __future__ import annotations

import importlib

import bpy
import numpy as np
import pytest

from tests.support.scenes import make_chain_armature, make_cylinder, pose_bone, skin_to_chain

pytestmark = pytest.mark.gpu  # it renders with the viewport's shaders (uses the gpu_context fixture)


@pytest.fixture
def twisted(addon, gpu_context):
    arm = make_chain_armature("Rig", [1.0, 1.0])
    cyl = make_cylinder("Cylinder")
    skin_to_chain(cyl, arm, blend=0.6)
    pose_bone(arm, "Bone1", (0, 0, 170))
    bpy.context.view_layer.objects.active = cyl
    bpy.ops.hybrid_skin.add()
    return cyl


def load_rgb(path) -> np.ndarray:
    image = bpy.data.images.load(str(path))
    try:
        px = np.empty(len(image.pixels), np.float32)
        image.pixels.foreach_get(px)
        return px.reshape(image.size[1], image.size[0], 4)[..., :3]
    finally:
        bpy.data.images.remove(image)


def test_writes_three_panels_that_differ(twisted, tmp_path):
    path = tmp_path / "cmp.png"
    assert bpy.ops.hybrid_skin.render_comparison(filepath=str(path), width=160, height=160) == {"FINISHED"}
    rgb = load_rgb(path)
    assert rgb.shape == (160, 480, 3)
    lbs, mix, dqs = rgb[:, :160], rgb[:, 160:320], rgb[:, 320:]
    background = np.median(rgb.reshape(-1, 3), axis=0)
    coverage = [float((np.abs(p - background).sum(-1) > 0.05).mean()) for p in (lbs, mix, dqs)]
    # A 170° twist collapses the LBS joint: it covers the least area, DQS the most, the hybrid between.
    assert coverage[0] < coverage[1] < coverage[2], coverage
    assert np.abs(lbs - dqs).mean() > 0.005


@pytest.mark.parametrize(
    ("filepath", "message"), [("/tmp/x.jpg", "not a .png"), ("/proc/version/x.png", "Cannot write")]
)
def test_bad_paths_are_reported(twisted, filepath, message):
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.hybrid_skin.render_comparison(filepath=filepath)


def image_rgb(image) -> np.ndarray:
    px = np.empty(len(image.pixels), np.float32)
    image.pixels.foreach_get(px)
    return px.reshape(image.size[1], image.size[0], 4)[..., :3]


def test_the_picture_opens_in_blender_as_the_png_it_wrote(twisted, tmp_path):
    """The comparison is an image datablock to look at in an Image Editor: with a file, the PNG itself
    (reloaded when the next comparison overwrites it: one datablock); without one, an image of its own."""
    path = tmp_path / "cmp.png"
    for size in (96, 128):
        done = bpy.ops.hybrid_skin.render_comparison(filepath=str(path), width=size, height=size)
        assert done == {"FINISHED"}
        shown = [i for i in bpy.data.images if i.filepath and bpy.path.abspath(i.filepath) == str(path)]
        assert len(shown) == 1 and tuple(shown[0].size) == (3 * size, size)
        np.testing.assert_allclose(image_rgb(shown[0]), load_rgb(path), atol=1e-6)

    before = set(tmp_path.iterdir())
    for size in (64, 80):  # no file: only the datablock, replaced by the next comparison
        assert bpy.ops.hybrid_skin.render_comparison(filepath="", width=size, height=size) == {"FINISHED"}
        image = bpy.data.images["Hybrid Skin Comparison"]
        assert tuple(image.size) == (3 * size, size) and image.source == "GENERATED"
        rgb = image_rgb(image)
        background = np.median(rgb.reshape(-1, 3), axis=0)
        assert (np.abs(rgb - background).sum(-1) > 0.05).mean() > 0.02  # the three meshes are in it
    assert set(tmp_path.iterdir()) == before
    assert [i.name for i in bpy.data.images].count("Hybrid Skin Comparison") == 1


def test_a_failed_save_is_one_sentence(twisted, addon, tmp_path, monkeypatch):
    comparison = importlib.import_module(addon.__name__ + ".analyze.comparison")

    def fails(pixels, path):
        raise RuntimeError("Error: Could not write image\n  libpng: write error\n")

    monkeypatch.setattr(comparison, "_save_png", fails)
    path = tmp_path / "cmp.png"
    with pytest.raises(RuntimeError) as refused:
        bpy.ops.hybrid_skin.render_comparison(filepath=str(path))
    message = str(refused.value).strip().removeprefix("Error:").strip()
    assert "\n" not in message, message
    reason = "Could not write image libpng: write error"
    assert message == f"Cannot write '{path}' ({reason}): choose a writable PNG file path"
