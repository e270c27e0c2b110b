"""What a texture bake is asked for (:class:`BakeOptions`) and what it gives back (:class:`BakeResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.animtex import AnimationTexture, Kind, Precision
from ..errors import HybridSkinError
from .files import PNG_COMPRESSION

__all__ = ["AUTO_STEPS", "MIN_FRAME_STEP", "PHASES", "BakeOptions", "BakeResult", "option_enum"]

#: Frame steps the tolerance search tries (scene frames between stored samples). The sub-frame steps
#: store fast actions (a punch, a blink) finer than the scene's frame rate; each step is sampled only
#: when the search reaches it, so they cost nothing when a whole-frame step meets the tolerance.
AUTO_STEPS = (8, 4, 3, 2, 1, 0.5, 0.25)
#: Smallest frame step: sub-frame steps (e.g. 0.5) sample fast actions finer than the scene's frame rate.
MIN_FRAME_STEP = 0.05
#: Keys of :attr:`BakeResult.timings`: ``sample`` is what the texture needs (frame changes and, for
#: VERTEX, skinning at stored frames; for bone kinds the palettes), ``truth`` what only the error report
#: needs (frames halfway between, and for bone kinds the skinned truth), then ``encode``, ``report``
#: (decode, compare, bounds), ``write`` (image, read-back check, sidecar) and ``mesh_data``.
PHASES = ("sample", "truth", "encode", "report", "write", "mesh_data")


@dataclass(frozen=True)
class BakeOptions:
    """What to write. ``tolerance > 0`` (scene units) replaces ``frame_step``/``precision`` by the
    cheapest pair whose max error stays within it. ``png_compression`` is Blender's PNG compression
    in percent (see :data:`.files.PNG_COMPRESSION` for why the default is 0). Bones an action does not
    key keep the pose the scene has at bake start (what Blender shows playing it); with
    ``reset_unkeyed_to_rest`` they are at rest instead (what an engine shows when it resets a rig).
    ``deform_factor`` and ``factor_mode`` replace each mesh's own Deform Factor number and Factor Mode
    (``None``: the object's settings): VERTEX bakes that factor in, bone kinds record the number."""

    directory: str
    kind: Kind = Kind.VERTEX
    precision: Precision = Precision.PNG16
    frame_step: float = 1.0
    tolerance: float = 0.0
    max_width: int = 8192
    power_of_two: bool = False
    embed_metadata: bool = True
    write_mesh_data: bool = True
    name: str = ""
    png_compression: int = PNG_COMPRESSION
    reset_unkeyed_to_rest: bool = False
    deform_factor: float | None = None
    factor_mode: str | None = None
    #: Also write the baked meshes as ``<name>.glb`` with the mesh data (needs ``write_mesh_data``).
    export_gltf: bool = False
    #: Also write ``<name>.babylon.json``, the sampled bone matrices for Babylon.js's own player (bone
    #: kinds; needs ``export_gltf``: Babylon plays the ``.glb``).
    export_babylon: bool = False


@dataclass
class BakeResult:
    image_path: str
    json_path: str
    texture: AnimationTexture
    metadata: dict
    report: dict
    tried: tuple = ()
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase, see PHASES
    gltf_path: str = ""  # the meshes as glTF (``BakeOptions.export_gltf``)
    babylon_path: str = ""  # Babylon.js's baked vertex animation (``BakeOptions.export_babylon``)


def option_enum(cls, value):
    """``value`` (a member or its string) as a member of the enum ``cls``; else one clear sentence."""
    try:
        return cls(getattr(value, "value", value))
    except ValueError as err:
        raise HybridSkinError(
            f"Unknown {cls.__name__.lower()} '{value}': use one of {[m.value for m in cls]}"
        ) from err
