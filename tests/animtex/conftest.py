"""Fixtures of the animation texture tests: the installed add-on's modules, and RobotExpressive."""

from __future__ import annotations

import importlib

import bpy
import pytest

from tests.support.assets import import_gltf


@pytest.fixture(scope="module")
def animtex(addon):
    """The installed add-on's animation texture bake module."""
    return importlib.import_module(addon.__name__ + ".animtex.bake")


@pytest.fixture(scope="module")
def summaries(addon):
    """The installed add-on's bake summaries (what the panels show about the last bake)."""
    return importlib.import_module(addon.__name__ + ".animtex.summary")


@pytest.fixture(scope="module")
def core(addon):
    return importlib.import_module(addon.__name__ + ".core.animtex")


@pytest.fixture
def robot(assets):
    """RobotExpressive imported as a user would, the armature active; its skinned meshes by name."""
    arm, meshes = import_gltf(assets / "RobotExpressive.glb")
    bpy.context.view_layer.objects.active = arm
    return arm, sorted(meshes, key=lambda o: o.name)
