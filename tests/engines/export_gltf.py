"""Export the meshes of a baked .blend as glTF for the browser tests (run in its own bpy process).

    python tests/engines/export_gltf.py baked.blend out.gltf [--y-up]

Blender's glTF exporter writes custom attributes only when their names start with "_" (upper-cased in the
file: ``_ANIMTEX_INDEX``); the bake names them as the sidecar says (``animtex_index``, ...). Until the
one-export work (issue 14 §5) writes them under exporter-friendly names itself, this copies each of them
(point and corner attributes: ``animtex_corner_index`` is per face corner) to ``_<name>`` and adds the
test-only ``_hs_vertex`` (each vertex's index in its Blender mesh, to pair the exporter's split vertices
with Blender's evaluation). The meshes go out in their own coordinates
(no skin, no modifiers; Z up as in Blender, or with ``--y-up`` converted to glTF's Y up the way the
exporter does by default): the animation textures are in the Z-up mesh space.
"""

from __future__ import annotations

import sys

import bpy
import numpy as np

COPIED = {"INT": "value", "FLOAT_COLOR": "color", "FLOAT": "value"}


def main(blend: str, gltf: str, y_up: bool = False) -> None:
    bpy.ops.wm.open_mainfile(filepath=blend, load_ui=False)
    baked = ("animtex_index", "animtex_bone_indices")
    meshes = [o for o in bpy.data.objects if o.type == "MESH" and any(a in o.data.attributes for a in baked)]
    if not meshes:
        raise SystemExit(f"error: no mesh in {blend} carries bake data (bake with --save)")
    for obj in meshes:
        me = obj.data
        n = len(me.vertices)
        me.attributes.new("_hs_vertex", "INT", "POINT").data.foreach_set(
            "value", np.arange(n, dtype=np.int32)
        )
        # by name: adding an attribute may move the others, invalidating references to them
        baked = [
            (a.name, a.data_type, a.domain, len(a.data))
            for a in me.attributes
            if a.name.startswith("animtex_") and a.domain in ("POINT", "CORNER") and a.data_type in COPIED
        ]
        for name, data_type, domain, count in baked:
            field = COPIED[data_type]
            dtype = np.int32 if data_type == "INT" else np.float32
            buf = np.empty(count * (4 if field == "color" else 1), dtype)
            me.attributes[name].data.foreach_get(field, buf)
            me.attributes.new("_" + name, data_type, domain).data.foreach_set(field, buf)
    bpy.ops.object.select_all(action="DESELECT")
    for obj in meshes:
        obj.select_set(True)
    result = bpy.ops.export_scene.gltf(
        filepath=gltf,
        export_format="GLTF_SEPARATE",
        use_selection=True,
        export_skins=False,
        export_yup=y_up,
        export_attributes=True,
        export_morph=False,
        export_animations=False,
        export_apply=False,
    )
    if result != {"FINISHED"}:
        raise SystemExit(f"error: glTF export returned {result}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--y-up" in sys.argv[3:])
