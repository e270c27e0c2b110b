"""Saved records load every shape ever saved: one test per shape, then a round trip.

The display record (``saved_state``), the bake record (``bake_state``) and the texture bake's summary
are JSON in string properties of the object; earlier builds wrote untyped dicts without a version. Each
old shape must load into the record that restores exactly what that build changed."""

from __future__ import annotations

import importlib
import json

import pytest


@pytest.fixture
def records(addon):
    return (
        importlib.import_module(addon.__name__ + ".rig.record"),
        importlib.import_module(addon.__name__ + ".rig.bake_record"),
        importlib.import_module(addon.__name__ + ".errors"),
    )


@pytest.fixture
def summaries(addon):
    return importlib.import_module(addon.__name__ + ".animtex.summary")


# ------------------------------------------------------------------------------------ display record
DISPLAY_SHAPES = {
    # GPU display, before modifier ids: hidden modifiers by name.
    "gpu, by name": (
        {"armature_modifier": "Armature", "display_type": "SOLID", "show_viewport": {"Armature": True,
                                                                                   "Smooth": False}},
        dict(armature=[0, "Armature"], display_type="SOLID", mix=None, factor_group="",
             hidden=[[0, "Armature", True], [0, "Smooth", False]]),
    ),
    # GPU display with persistent ids and the object's name.
    "gpu, by id": (
        {"armature_modifier": "Armature", "armature_ref": [7, "Armature"], "display_type": "TEXTURED",
         "object": "Body", "active_group": 2, "show_viewport": [[7, "Armature", True]]},
        dict(armature=[7, "Armature"], object_name="Body", active_group=2, hidden=[[7, "Armature", True]]),
    ),
    # GPU display stepping aside outside Object Mode.
    "gpu aside": (
        {"armature_ref": [7, "Armature"], "display_type": "WIRE", "aside": "WEIGHT_PAINT"},
        dict(aside="WEIGHT_PAINT", hidden=[], display_type="WIRE"),
    ),
    # Evaluated display, first form: the added modifier by its fixed name, the group by its fixed name.
    "evaluated, fixed names": (
        {"armature_modifier": "Armature", "display_type": "TEXTURED", "preserve_volume": True,
         "added_modifier": True, "added_group": True, "active_group": 0},
        dict(
            mix=[0, "HybridSkin DQS"], factor_group="HybridSkin Factor", owns_group=True, preserve_volume=True
        ),
    ),
    # Evaluated display, later: refs, a free group name, factors due after Edit Mode.
    "evaluated, refs": (
        {"armature_ref": [3, "Armature"], "display_type": "TEXTURED", "preserve_volume": False,
         "added_modifier": [9, "HybridSkin DQS.001"], "added_group": True,
         "factor_group": "HybridSkin Factor.001", "factors_due": "EDIT"},
        dict(mix=[9, "HybridSkin DQS.001"], factor_group="HybridSkin Factor.001", factors_due="EDIT"),
    ),
    # Evaluated display of a linked duplicate's copy: the group belongs to the original.
    "evaluated, shared group": (
        {"armature_ref": [3, "Armature"], "display_type": "TEXTURED", "added_modifier": [4, "HybridSkin DQS"],
         "added_group": False, "factor_group": "HybridSkin Factor"},
        dict(owns_group=False),
    ),
}


@pytest.mark.parametrize("shape", DISPLAY_SHAPES)
def test_every_display_record_ever_saved_loads(records, shape):
    display_record, _bake, _errors = records
    saved, expected = DISPLAY_SHAPES[shape]
    loaded = display_record.DisplayRecord.load(json.dumps(saved))
    for name, value in expected.items():
        assert getattr(loaded, name) == value, (shape, name)
    again = display_record.DisplayRecord.load(loaded.save())
    assert again == loaded and json.loads(loaded.save())["version"] == display_record.DisplayRecord.VERSION


# --------------------------------------------------------------------------------------- bake record
def test_a_version_0_bake_record_loads(records):
    _display, bake_record, _errors = records
    saved = {"target": "SHAPE_KEYS", "bypassed": {"Armature": [True, False]},
             "keys": ["HS Bake 0001"], "frames": [1], "created_basis": True, "active_key": 0}
    loaded = bake_record.BakeRecord.load(json.dumps(saved))
    assert loaded.bypassed == [[0, "Armature", True, False]]
    assert loaded.keys == ["HS Bake 0001"] and loaded.created_basis and loaded.action is None
    assert bake_record.BakeRecord.load(loaded.save()) == loaded


def test_a_version_0_bake_record_with_ids_and_a_cache_loads(records):
    _display, bake_record, _errors = records
    saved = {"target": "PC2", "bypassed": [[5, "Armature", True, True]], "keys": [], "frames": [1, 2],
             "cache_modifier": [6, "HybridSkin Cache"]}
    loaded = bake_record.BakeRecord.load(json.dumps(saved))
    assert loaded.bypassed == [[5, "Armature", True, True]]
    assert loaded.cache_modifier == [6, "HybridSkin Cache"]


def test_a_record_from_a_newer_build_is_one_sentence(records):
    _display, bake_record, errors = records
    with pytest.raises(errors.HybridSkinError, match="saved by a newer Hybrid Skin .version 99.: update"):
        bake_record.BakeRecord.load(json.dumps({"version": 99, "target": "PC2"}))


def test_nothing_saved_is_none(records):
    display_record, bake_record, _errors = records
    assert display_record.DisplayRecord.load("") is None and bake_record.BakeRecord.load("") is None


# ---------------------------------------------------------------------------- texture bake summary
def test_a_version_0_texture_bake_summary_loads(summaries):
    # As builds before versions wrote it (the sidecar under "json"), relative paths included.
    saved = {"kind": "BONE_DQ", "precision": "PNG16", "frame_step": 1.0, "clips": 2, "size": [64, 32],
             "image": "//tex/Rig_bone_dq.png", "json": "//tex/Rig_bone_dq.json", "max": 1.5e-4, "mean": 2e-5,
             "max_percent": 0.01, "mean_percent": 0.001, "warnings": ["w"], "seconds": {"sample": 0.5}}
    loaded = summaries.BakeSummary.load(json.dumps(saved))
    assert loaded.sidecar == "//tex/Rig_bone_dq.json" and loaded.image == "//tex/Rig_bone_dq.png"
    assert (loaded.kind, loaded.clips, loaded.size, loaded.max, loaded.warnings, loaded.seconds) == (
        "BONE_DQ", 2, [64, 32], 1.5e-4, ["w"], {"sample": 0.5})
    again = summaries.BakeSummary.load(loaded.save())
    assert again == loaded and json.loads(loaded.save())["version"] == summaries.BakeSummary.VERSION
