"""Texture bake options are declared once (issue 27 §3): the dialog, the command line, validation, the
sidecar's ``options`` block and the docs table all come from ``BakeOptions`` and agree with each other."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json

import bpy
import pytest

from tools import docs_tables


@pytest.fixture
def options(addon):
    return importlib.import_module(addon.__name__ + ".animtex.options")


def test_the_dialog_offers_every_option_declared_for_it_with_its_range(options, addon):
    properties = bpy.ops.hybrid_skin.bake_animation_texture.get_rna_type().properties
    for name, option in options.declared():
        assert (name in properties.keys()) == option.ui, name
        if option.ui and option.minimum is not None:
            assert properties[name].hard_min == pytest.approx(option.minimum), name
        if option.ui and option.maximum is not None:
            assert properties[name].hard_max == pytest.approx(option.maximum), name


def test_the_command_line_offers_every_option_declared_for_it(options):
    parser = argparse.ArgumentParser()
    options.add_arguments(parser)
    flags = {flag for action in parser._actions for flag in action.option_strings}
    declared = {option.cli for _name, option in options.declared() if option.cli}
    assert flags - {"-h", "--help"} == declared
    args = parser.parse_args(["--kind", "BONE_DQ", "--max-width", "512", "--no-embed", "--babylon"])
    baked = options.from_arguments(args, "/tmp/x")
    assert (baked.kind, baked.max_width, baked.embed_metadata) == ("BONE_DQ", 512, False)
    assert baked.export_babylon and baked.export_gltf and baked.write_mesh_data  # --babylon implies the .glb
    with pytest.raises(SystemExit):  # choices come from the declaration too
        parser.parse_args(["--factor-mode", "SOMETIMES"])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"max_width": 15}, "Max Width must be 16 … 16384, got 15"),  # the dialog's minimum, for every caller
        ({"max_width": 20000}, "Max Width must be 16 … 16384, got 20000"),
        ({"frame_step": 0.01}, "Frame Step must be at least 0.05"),
        ({"tolerance": float("nan")}, "Tolerance must be 0 (off"),
        ({"kind": "VOXEL"}, "Kind must be one of ['VERTEX', 'BONE_MATRIX', 'BONE_DQ']"),
    ],
)
def test_every_caller_gets_the_declared_ranges(options, change, message):
    errors = importlib.import_module(options.__name__.rsplit(".", 2)[0] + ".errors")
    with pytest.raises(errors.HybridSkinError) as err:
        dataclasses.replace(options.BakeOptions("/tmp"), **change).validate()
    assert message in str(err.value)


def test_the_sidecar_records_what_the_bake_was_asked_for(options, addon, tmp_path, assets):
    from tests.support.assets import import_gltf  # noqa: PLC0415

    arm, _meshes = import_gltf(assets / "RobotExpressive.glb")
    bake = importlib.import_module(addon.__name__ + ".animtex.bake")
    asked = options.BakeOptions(
        str(tmp_path), kind="BONE_DQ", precision="EXR16", max_width=1024, file_name="t"
    )
    bake.bake(bpy.context, arm, asked, None)
    recorded = json.loads((tmp_path / "t.json").read_text())["options"]
    assert recorded == asked.record()
    assert recorded["kind"] == "BONE_DQ" and recorded["max_width"] == 1024 and "directory" not in recorded


def test_the_docs_table_is_generated_from_the_declaration():
    assert docs_tables.stale() == [], "run make tools (tools/docs_tables.py) and commit the result"
