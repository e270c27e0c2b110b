"""What a texture bake is asked for (:class:`BakeOptions`) and what it gives back (:class:`BakeResult`).

Each option is declared once, as a field of :class:`BakeOptions` with an :class:`Option` in its metadata;
from that one declaration come the bake dialog's properties (:func:`operator_properties`), the command
line's flags (:func:`add_arguments`, :func:`from_arguments`), the range checks every caller gets
(:meth:`BakeOptions.validate`), the sidecar's ``options`` block (:meth:`BakeOptions.record`) and the
table in ``docs/usage.md`` (:func:`docs_table`, checked equal by a test).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field, fields
from typing import Any

from ..core.animtex import AnimationTexture
from ..errors import HybridSkinError
from .files import PNG_COMPRESSION

__all__ = [
    "AUTO_STEPS",
    "FACTOR_MODES",
    "KIND_ITEMS",
    "MIN_FRAME_STEP",
    "PHASES",
    "PRECISION_ITEMS",
    "BakeOptions",
    "BakeResult",
    "Option",
    "add_arguments",
    "docs_table",
    "from_arguments",
    "operator_properties",
    "option_enum",
]

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

KIND_ITEMS = (
    ("VERTEX", "Vertex", "Skinned positions and normals per vertex and frame (no skinning at runtime)"),
    ("BONE_MATRIX", "Bone Matrix", "3x4 skinning matrix per bone and frame (skinning at runtime)"),
    ("BONE_DQ", "Bone Dual Quaternion", "Rotation + pivot position per bone and frame (hybrid at runtime)"),
)
PRECISION_ITEMS = (
    ("PNG8", "PNG 8-bit", "Smallest; about 1/255 of the motion range"),
    ("PNG16", "PNG 16-bit", "16 bits inside the motion's bounding box; loads everywhere"),
    ("EXR16", "EXR Half", "Half floats, centred on the motion range"),
    ("EXR32", "EXR Float", "Full float: exact to float32"),
)
FACTOR_MODES = ("GLOBAL", "VERTEX_GROUP", "AUTO")


@dataclass(frozen=True)
class Option:
    """How one :class:`BakeOptions` field shows in the dialog, on the command line and in the docs."""

    label: str
    description: str
    #: The command-line flag, or "" when the command line does not offer it.
    cli: str = ""
    #: A flag that turns a default-on option off (``--no-embed``).
    cli_off: bool = False
    #: Shown in the bake dialog (an operator property).
    ui: bool = True
    minimum: float | None = None
    maximum: float | None = None
    soft_max: float | None = None
    step: int | None = None
    precision: int | None = None
    subtype: str = "NONE"
    #: Enum items ``(identifier, label, description)``; or plain choices for the command line.
    items: tuple = ()
    #: Recorded in the sidecar's ``options`` block.
    recorded: bool = True
    #: The dialog offers the last bake's value again (off: every bake starts from the default, e.g. a Name
    #: that belonged to the previous object).
    remembered: bool = True
    #: What a value must be, in words, when the range alone would not say it (the refusal's sentence).
    rule: str = ""


def _option(default, **option) -> Any:
    return field(default=default, metadata={"option": Option(**option)})


@dataclass(frozen=True)
class BakeOptions:
    """What to write (see the module docstring; each field's :class:`Option` says what it is)."""

    directory: str = _option(
        "//", label="Folder", description="Where the texture, its sidecar and any export are written",
        subtype="DIR_PATH", recorded=False,
    )
    file_name: str = _option(
        "", label="Name", description="File name without extension (empty: object and kind)", cli="--name",
        recorded=False, remembered=False,
    )
    kind: str = _option("VERTEX", label="Kind", description="What the texture stores", cli="--kind",
                        items=KIND_ITEMS)
    precision: str = _option("PNG16", label="Precision", description="How each texel stores its numbers",
                             cli="--precision", items=PRECISION_ITEMS)
    frame_step: float = _option(
        1.0, label="Frame Step",
        description="Scene frames between stored samples (below 1 samples fast actions between frames)",
        cli="--frame-step", minimum=MIN_FRAME_STEP, soft_max=16.0, step=50,
    )
    tolerance: float = _option(
        0.0, label="Tolerance",
        description="If above 0, pick the smallest frame step and precision whose max error stays below it "
        "(scene units)",
        cli="--tolerance", minimum=0.0, precision=5, subtype="DISTANCE",
        rule="0 (off: the frame step and precision given) or a positive distance in scene units",
    )
    max_width: int = _option(
        8192, label="Max Width", description="Texture width limit: rows wrap there", cli="--max-width",
        minimum=16, maximum=16384,
    )
    power_of_two: bool = _option(False, label="Power of Two", description="Pad both sides to powers of two",
                                 cli="--power-of-two")
    embed_metadata: bool = _option(
        True, label="Embed Metadata", description="Also store the decode table in the texture's first rows",
        cli="--no-embed", cli_off=True,
    )
    write_mesh_data: bool = _option(
        True, label="Mesh Data",
        description="Store texel coordinates / bone indices and weights on the meshes (the command line: "
        "with --save, --gltf or --babylon)",
    )
    export_gltf: bool = _option(
        False, label="glTF",
        description="Also write the baked meshes as <name>.glb beside the texture, with the mesh data as "
        "glTF attributes an engine loader keeps (needs Mesh Data)",
        cli="--gltf",
    )
    export_babylon: bool = _option(
        False, label="Babylon.js",
        description="Bone kinds: also write <name>.babylon.json, the bone matrices for Babylon.js's own "
        "baked vertex animation player (LBS), to play with the .glb (needs glTF; the command line: implies "
        "--gltf)",
        cli="--babylon",
    )
    export_instancing: bool = _option(
        False, label="Instancing Mesh",
        description="Bone kinds: also write <name>_instancing.glb, the meshes as a static mesh (no skin) "
        "whose UV channels after their own carry each vertex's palette indices, weights and Auto rest data, "
        "for engines' instanced static meshes (Unreal's AnimToTexture way, Unity's instancing)",
        cli="--instancing",
    )
    tangents: bool = _option(
        False, label="Tangents",
        description="For normal maps: each vertex's tangent of the mesh's UV map (VERTEX: Blender's own "
        "tangents of the deformed mesh in a third texel per vertex, 1.5 times the texture; bone kinds: the "
        "glTF export's TANGENT, turned with the skin at runtime). Needs a UV map and faces of at most 4 "
        "corners",
        cli="--tangents",
    )
    unkeyed_bones_at_rest: bool = _option(
        False, label="Unkeyed Bones at Rest",
        description="Bake bones an action does not key at their rest pose (default: as the scene poses "
        "them, which is what Blender shows when the action plays)",
        cli="--unkeyed-bones-at-rest",
    )
    deform_factor: float | None = _option(
        None, label="Deform Factor",
        description="A deform factor in [0, 1] (0 = LBS, 1 = DQS) instead of each object's own",
        cli="--deform-factor", ui=False,  # checked by the factor's one resolver, as everywhere
    )
    factor_mode: str | None = _option(
        None, label="Factor Mode",
        description="A factor mode instead of each object's own (VERTEX bakes it in)",
        cli="--factor-mode", ui=False, items=FACTOR_MODES,
    )
    runtime_auto: bool = _option(
        True, label="Auto at Runtime",
        description="Bone kinds whose meshes are in factor mode Auto (Round or Keep Volume; their own or "
        "--factor-mode AUTO): also store Auto's per-bone data in the texture and each vertex's Auto rest "
        "data on the mesh, so runtimes compute Auto per vertex (off: one runtime factor)",
        cli="--no-runtime-auto", cli_off=True,
    )
    replace_files: bool = _option(
        False, label="Replace Files",
        description="Replace files at the bake's names that are not this object's previous bake (another "
        "object's bake, a file Hybrid Skin did not write); without it such a bake is refused",
        cli="--replace", recorded=False, remembered=False,
    )
    memory_budget: float = _option(
        0.0, label="Memory Budget",
        description="Most memory the bake may hold, in MiB (0: half of this machine's memory): a bake that "
        "would hold more is refused before it plays a frame",
        cli="--memory-budget", minimum=0.0, recorded=False,
        rule="0 (half of this machine's memory) or a positive number of MiB",
    )
    png_compression: int = _option(
        PNG_COMPRESSION, label="PNG Compression", description="Blender's PNG compression in percent",
        ui=False, minimum=0, maximum=100, recorded=False,
    )

    def validate(self) -> None:
        """Every option within its declared range and choices; else one sentence naming it."""
        for name, option in declared():
            value = getattr(self, name)
            if value is None:
                continue
            if option.items:
                allowed = [item[0] if isinstance(item, tuple) else item for item in option.items]
                if getattr(value, "value", value) not in allowed:
                    raise HybridSkinError(f"{option.label} must be one of {allowed}, got {value!r}")
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            low = -math.inf if option.minimum is None else option.minimum
            high = math.inf if option.maximum is None else option.maximum
            if not low <= value <= high:  # NaN too
                span = option.rule or (f"at least {low:g}" if high == math.inf else f"{low:g} … {high:g}")
                raise HybridSkinError(f"{option.label} must be {span}, got {value!r}")

    def record(self) -> dict[str, Any]:
        """The sidecar's ``options`` block: what this bake was asked for."""
        return {
            name: getattr(getattr(self, name), "value", getattr(self, name))
            for name, option in declared()
            if option.recorded
        }


def declared() -> list[tuple[str, Option]]:
    """``(field name, Option)`` of every option, in declaration order."""
    return [(f.name, f.metadata["option"]) for f in fields(BakeOptions)]


# ---------------------------------------------------------------------------------------------- dialog
def operator_properties() -> dict[str, Any]:
    """The bake dialog's properties, one per option with ``ui``: for the operator's annotations."""
    from bpy.props import (  # noqa: PLC0415
        BoolProperty,
        EnumProperty,
        FloatProperty,
        IntProperty,
        StringProperty,
    )

    defaults = BakeOptions()
    out = {}
    for name, option in declared():
        if not option.ui:
            continue
        common = {"name": option.label, "description": option.description}
        if not option.remembered:
            common["options"] = {"SKIP_SAVE"}
        default = getattr(defaults, name)
        if option.items:
            out[name] = EnumProperty(items=list(option.items), default=default, **common)
        elif isinstance(default, bool):
            out[name] = BoolProperty(default=default, **common)
        elif isinstance(default, int):
            bounds = (("min", option.minimum), ("max", option.maximum))
            limits = {key: int(value) for key, value in bounds if value is not None}
            out[name] = IntProperty(default=default, **limits, **common)
        elif isinstance(default, float):
            settings = (
                ("min", option.minimum), ("max", option.maximum), ("soft_max", option.soft_max),
                ("step", option.step), ("precision", option.precision),
            )
            extra = {key: value for key, value in settings if value is not None}
            out[name] = FloatProperty(default=default, subtype=option.subtype, **extra, **common)
        else:
            if option.subtype == "DIR_PATH":
                common["options"] = common.get("options", set()) | {"PATH_SUPPORTS_BLEND_RELATIVE"}
            out[name] = StringProperty(default=default, subtype=option.subtype, **common)
    return out


# ---------------------------------------------------------------------------------------- command line
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One flag per option with ``cli``."""
    defaults = BakeOptions()
    for name, option in declared():
        if not option.cli:
            continue
        default = getattr(defaults, name)
        help_text = option.description[0].lower() + option.description[1:]
        if isinstance(default, bool):
            parser.add_argument(option.cli, dest=name, action="store_true", help=help_text)
        elif option.items:
            choices = [item[0] if isinstance(item, tuple) else item for item in option.items]
            parser.add_argument(option.cli, dest=name, choices=choices, default=default, help=help_text)
        else:
            kind = type(default) if default is not None else float
            parser.add_argument(option.cli, dest=name, type=kind, default=default, help=help_text)


def from_arguments(args: argparse.Namespace, directory: str) -> BakeOptions:
    """The options the flags of :func:`add_arguments` ask for. Mesh data is stored when the .blend is
    saved with it (``--save``) or an export carries it; ``--babylon`` implies ``--gltf``."""
    values: dict[str, Any] = {"directory": directory}
    for name, option in declared():
        if option.cli:
            value = getattr(args, name)
            values[name] = (not value) if option.cli_off else value
    values["export_gltf"] = values["export_gltf"] or values["export_babylon"]
    values["write_mesh_data"] = bool(getattr(args, "save", False)) or values["export_gltf"]
    return BakeOptions(**values)


# ------------------------------------------------------------------------------------------------ docs
def docs_table() -> str:
    """The options as a Markdown table (``docs/usage.md`` holds it; a test checks it is this)."""
    defaults = BakeOptions()
    rows = ["| option | dialog | command line | default | what it does |", "|---|---|---|---|---|"]
    for name, option in declared():
        default = getattr(defaults, name)
        shown = "—" if default is None or default == "" else f"`{default}`"
        dialog = option.label if option.ui else "—"
        cli = f"`{option.cli}`" if option.cli else "—"
        description = option.description.replace("|", "\\|")
        rows.append(f"| `{name}` | {dialog} | {cli} | {shown} | {description} |")
    return "\n".join(rows) + "\n"


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
    #: Files of this object's previous bake removed because this one has none of that name (they no
    #: longer matched): e.g. its ``.glb`` when this bake exports none.
    removed: list[str] = field(default_factory=list)
    instancing_path: str = ""  # the instancing mesh (``BakeOptions.export_instancing``)


def option_enum(cls, value):
    """``value`` (a member or its string) as a member of the enum ``cls``; else one clear sentence."""
    try:
        return cls(getattr(value, "value", value))
    except ValueError as err:
        raise HybridSkinError(
            f"Unknown {cls.__name__.lower()} '{value}': use one of {[m.value for m in cls]}"
        ) from err
