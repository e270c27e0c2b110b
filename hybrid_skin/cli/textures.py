"""``bake-textures``: bake animation textures (vertex animation textures, VAT) from a .blend file, headless.

Examples (the same flags both ways; Blender's way bakes the file it opened when none is named)::

    blender -b crowd.blend --command hybrid_skin bake-textures --object Armature --all-actions \\
        --kind BONE_DQ --precision PNG16 --output textures/
    python -m hybrid_skin bake-textures crowd.blend --object Armature --all-actions --output textures/

Writes ``<output>/<name>.png|.exr`` and ``<name>.json`` (see :mod:`hybrid_skin.animtex.bake`) and prints
the error report. Exit code 0 on success; 1 with an ``error:`` line on stderr when the scene or the
output cannot be baked (no armature, unknown action, unwritable folder, ...); 2 for a missing file.
The .blend is left unchanged unless ``--save`` asks to store the per-vertex texel data in it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .console import quiet


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The file, the object, the actions and where to write; every bake option from its one declaration
    (:mod:`..animtex.options`)."""
    from ..animtex import options  # noqa: PLC0415 - no Blender module needed to print the usage

    parser.add_argument(
        "blend", type=Path, nargs="?", help=".blend file to open (default: the one Blender has open)"
    )
    parser.add_argument(
        "--object", required=True, help="armature (bakes the meshes it deforms) or skinned mesh"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--actions", nargs="+", metavar="ACTION", help="actions to bake as clips (default: active)"
    )
    which.add_argument("--all-actions", action="store_true", help="every action that animates the armature")
    parser.add_argument("--output", type=Path, required=True, help="output folder (created if missing)")
    parser.add_argument("--save", action="store_true", help="save the .blend with the per-vertex texel data")
    options.add_arguments(parser)


def _fail(message: str, code: int = 1) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def _blender_reason(err: RuntimeError) -> str:
    """Blender's own message from an operator's RuntimeError ("Error: File format is not supported in
    file '…'") as one line."""
    text = " ".join(str(err).split())
    return text.removeprefix("Error:").strip() or type(err).__name__


def _is_open(blend: Path) -> bool:
    """Whether Blender has this very file open, unchanged since it was loaded."""
    import bpy

    open_path = bpy.data.filepath
    return bool(open_path) and not bpy.data.is_dirty and Path(open_path).resolve() == blend.resolve()


def run(args: argparse.Namespace) -> int:
    if args.blend is None:
        import bpy

        if not bpy.data.filepath:
            return _fail("no .blend file: name one, or open one (blender -b scene.blend --command ...)", 2)
        args.blend = Path(bpy.data.filepath)
    if not args.blend.is_file():
        return _fail(f"no such .blend file: {args.blend}", 2)
    try:
        args.output.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        return _fail(f"cannot create the output folder '{args.output}': {err.strerror}")
    import bpy

    from ..animtex import bake as animtex_bake
    from ..animtex import options as bake_options
    from ..animtex.scene import compatible_actions, find_target
    from ..errors import HybridSkinError
    from ..rig import properties

    own_properties = not hasattr(bpy.types.Object, "hybrid_skin")
    if own_properties:  # read the objects' saved Hybrid Skin settings (deform factor, modes)
        properties.register()
    try:
        try:
            if not _is_open(args.blend):  # Blender opened it before --command: no second load
                with quiet(echo_on_failure=False):  # Blender 5's "Read blend: …" log line
                    bpy.ops.wm.open_mainfile(filepath=str(args.blend.resolve()), load_ui=False)
        except RuntimeError as err:  # not a .blend, damaged, or from a newer Blender
            return _fail(f"cannot open '{args.blend}' as a .blend file: {_blender_reason(err)}", 2)
        obj = bpy.data.objects.get(args.object)
        if obj is None:
            return _fail(f"no object '{args.object}' in {args.blend.name}")
        names = args.actions
        if args.all_actions:
            arm, _meshes = find_target(obj, bpy.context.scene)
            names = [a.name for a in compatible_actions(arm)]
            if not names:
                return _fail(f"no action animates the bones of '{arm.name}'")
        options = bake_options.from_arguments(args, str(args.output.resolve()))
        result = animtex_bake.bake(bpy.context, obj, options, names)
        if args.save:
            try:
                bpy.ops.wm.save_mainfile()
            except RuntimeError as err:
                return _fail(
                    f"the textures are written, but '{args.blend}' could not be saved with the mesh data: "
                    f"{_blender_reason(err)}"
                )
    except HybridSkinError as err:
        return _fail(str(err))
    finally:
        if own_properties:
            properties.unregister()
    print_result(result)
    return 0


def print_result(result) -> None:
    tex, report = result.texture, result.report
    print(
        f"{tex.kind.value} {tex.precision.value}: {tex.layout.width}x{tex.layout.height}, "
        f"{len(tex.clips)} clip(s), frame step {tex.clips[0].frame_step:g}"
    )
    print(f"  {result.image_path}\n  {result.json_path}")
    if result.gltf_path:
        print(f"  {result.gltf_path}")
    if result.babylon_path:
        print(f"  {result.babylon_path}")
    for name in result.removed:
        print(f"  removed {name}: the previous bake's, which no longer matched")
    if result.instancing_path:
        print(f"  {result.instancing_path}")
    f = result.metadata["deform_factor"]
    number = "per vertex" if f["value"] is None else f"{f['value']:g}"
    where = "baked in" if f["baked"] else "at runtime"
    auto = result.metadata.get("auto")
    if auto is not None:  # the runtime computes Auto; the slider's number is for runtimes that play one
        print(f"  deform factor Auto per vertex ({auto['profile']}, at runtime; one factor: {number})")
        stats = report["auto"]["factor"]["overall"]
        if stats is not None:
            print(f"  Auto factor vs the add-on's: max {stats['max']:.4g}, mean {stats['mean']:.4g}")
    else:
        print(f"  deform factor {number} ({f['mode']}, {where}, from {f['source']})")
    for name in ("frames", "mid_frames", "overall"):
        stats = report[name]
        if stats is not None:
            print(
                f"  {name:<10} max {stats['max']:.4g} ({stats['max_percent']:.3g}%)  "
                f"mean {stats['mean']:.4g} ({stats['mean_percent']:.3g}%)"
            )
    for warning in result.warnings:
        print(f"  warning: {warning}")
