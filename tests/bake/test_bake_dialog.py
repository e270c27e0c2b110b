"""The shape-key and point-cache bake takes its options before it runs (a dialog; the file browser's side
panel for a cache), and says before OK what it will make or why it would be refused: the same counts and
sentences the bake checks (drawn with tests/support/layout.py; nothing is baked)."""

from __future__ import annotations

import bpy
import pytest

from tests.robustness.bake_scene import rig
from tests.support.layout import Drawn, RecordingLayout, operator_properties

DEFAULTS = {"frame_start": 1, "frame_end": 12, "frame_step": 1, "filepath": "", "replace_file": False,
            "memory_budget": 0.0}  # fmt: skip


def draw(**values) -> RecordingLayout:
    cls = bpy.types.HYBRID_SKIN_OT_bake_deformation
    layout = RecordingLayout()
    state = {**DEFAULTS, **values}
    cls.draw(Drawn(cls, layout, bl_rna=operator_properties(cls.bl_idname), **state), bpy.context)
    return layout


def test_the_dialog_takes_the_frames_first_and_says_what_it_makes(addon):
    arm, obj = rig()
    layout = draw(target="SHAPE_KEYS")
    assert layout.props() == ["target", "frame_start", "frame_end", "frame_step", "memory_budget"]
    assert layout.labels() == [f"12 shape keys of {len(obj.data.vertices)} vertices"]


def test_a_typo_in_end_is_said_before_ok(addon):
    arm, obj = rig()
    (text,) = draw(target="SHAPE_KEYS", frame_end=1_000_000).labels()
    assert text.startswith("Frames 1–1,000,000 (every frame) are 1,000,000 shape keys"), text


@pytest.mark.parametrize("fmt", ["PC2", "MDD"])
def test_the_file_browser_panel_says_whose_file_is_there(addon, tmp_path, fmt):
    arm, obj = rig()
    path = tmp_path / f"x.{fmt.lower()}"
    path.write_text("my notes")
    layout = draw(target=fmt, filepath=str(path))
    assert "replace_file" in layout.props()
    (text,) = layout.labels()
    assert "exists and is not a point cache" in text, text
    (text,) = draw(target=fmt, filepath=str(path), replace_file=True).labels()
    assert text == f"12 frames in the cache of {len(obj.data.vertices)} vertices", text


def test_options_and_file_are_the_objects_own(addon):
    """Nothing of the previous object's bake is offered to the next one."""
    props = operator_properties("hybrid_skin.bake_deformation").properties
    for name in ("frame_start", "frame_end", "filepath", "replace_file", "use_modal"):
        assert props[name].is_skip_save, name
