"""Which deform factor a texture bake stores or plays, and what its sidecar says about it.

:class:`Factors` is the part of :class:`.bake.TextureBake` that decides it (inherited): each mesh's factor
through the rig's one resolver (:func:`..rig.factor.resolve`) with the bake's options in place of the
object's own where given, the one runtime factor of the bone kinds, the Auto profile a bone texture
carries, and the sidecar's ``deform_factor`` record.

A mesh that never got Hybrid Skin is baked the way Blender deforms it (issue 35): its Armature modifier's
LBS, or DQS where that modifier has Preserve Volume on (:meth:`Factors.shown_factors`), never the settings'
default; a factor the bake is given instead is used, and the bake says which (as it does for a mesh whose
settings a script set without adding Hybrid Skin: they are used, as the API uses them). A bone texture
plays one factor for all its meshes: a mesh Blender shows at another one, or with a Vertex Group factor,
is named.
"""

from __future__ import annotations

import bpy

from ..core.animtex import Kind
from ..rig import factor, mesh_bind, stack
from .scene import object_settings, runtime_auto_profile

__all__ = ["Factors"]

#: The Hybrid Skin settings that say how to skin an object: set on one without Hybrid Skin, they are used.
SETTINGS = ("deform_factor", "factor_mode", "factor_vertex_group")


class Factors:
    """The factor methods of :class:`.bake.TextureBake` (which it inherits)."""

    def shown_factors(self) -> dict[str, float]:
        """The factor Blender shows each mesh without Hybrid Skin at (0 = LBS; 1 = DQS where its Armature
        modifier has Preserve Volume), by object name, for the meshes whose Hybrid Skin settings nobody set
        (a script that set them is skinned by them, as the API does); each said in a warning."""
        shown: dict[str, float] = {}
        for part in self.parts:
            settings = object_settings(part.obj)
            if settings is not None and settings.enabled:
                continue
            preserve = stack.armature_modifier(part.obj, part.modifier).use_deform_preserve_volume
            how = "DQS (Preserve Volume on)" if preserve else "LBS (Preserve Volume off)"
            if settings is not None and any(settings.is_property_set(n) for n in SETTINGS):
                self.warnings.append(
                    f"'{part.obj.name}' has no Hybrid Skin, so Blender shows it with {how}, but its "
                    "Hybrid Skin settings were set: baked with them, as the API skins it (add Hybrid Skin to "
                    "see it so)"
                )
                continue
            shown[part.obj.name] = 1.0 if preserve else 0.0
        given = self.options.deform_factor is not None or self.options.factor_mode is not None
        for value, how in ((0.0, "LBS (Preserve Volume off)"), (1.0, "DQS (Preserve Volume on)")):
            names = [f"'{name}'" for name, f in shown.items() if f == value]
            if not names:
                continue
            which = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
            have = "has" if len(names) == 1 else "have"
            done = "baked at the factor the bake was given" if given else "baked as Blender shows them"
            self.warnings.append(
                f"{which} {have} no Hybrid Skin and Blender shows them with {how} by their Armature "
                f"modifier: {done}"
            )
        return shown

    def _factor(self, obj: bpy.types.Object, bound=None, override=None) -> factor.DeformFactor:
        """``obj``'s deform factor with the options' number and mode in place of its own, where given; for a
        mesh without Hybrid Skin (and no factor given), the one Blender shows it at."""
        opts = self.options
        if override is None and opts.deform_factor is None and opts.factor_mode is None:
            override = self._shown.get(obj.name)
        return factor.resolve(obj, bound, override, value=opts.deform_factor, mode=opts.factor_mode)

    def _own_number(self, obj: bpy.types.Object) -> float:
        """The one number a mesh plays at: the factor Blender shows it at without Hybrid Skin, else its
        slider (whatever its mode)."""
        shown = self._shown.get(obj.name)
        return shown if shown is not None else factor.global_value(obj)

    @property
    def bone_factor(self) -> float:
        """Runtime deform factor of the bone kinds: the option's number, else the first mesh's own."""
        if self.options.deform_factor is not None:
            return float(self.options.deform_factor)
        return self._own_number(self.parts[0].obj)

    def one_factor_warnings(self) -> None:
        """Bone kinds play one factor: name each mesh Blender shows otherwise (another number, a Vertex
        Group factor), unless the texture carries Auto or the bake was given the factor."""
        if self.kind is Kind.VERTEX or self.auto_profile or self.options.deform_factor is not None:
            return
        played = self.bone_factor
        for part, mode in zip(self.parts, self._factor_modes()):
            own = self._own_number(part.obj)
            if mode == "VERTEX_GROUP":
                why = "uses a Vertex Group factor"
            elif mode == "GLOBAL" and own != played:
                why = f"is shown at {own:g}"
            else:
                continue
            self.warnings.append(
                f"'{part.obj.name}' {why}, and a bone texture plays one factor, {played:g} (the runtime "
                "factor): bake it on its own, or bake VERTEX, to keep what Blender shows"
            )

    def _runtime_auto(self) -> str | None:
        """The Auto profile a bone texture carries (:func:`.scene.runtime_auto_profile`); a warning when
        some mesh is in Auto but the texture cannot carry it."""
        if self.kind is Kind.VERTEX or not self.options.runtime_auto:
            return None
        modes = self._factor_modes()
        if "AUTO" not in modes:
            return None
        names = [p.obj.name for p in self.parts]
        profiles = [mesh_bind.auto_profile(p.obj) for p in self.parts]
        profile, why = runtime_auto_profile(names, modes, profiles)
        if why is not None:
            self.warnings.append(why)
        return profile

    def _factor_modes(self) -> list[str]:
        """Each mesh's factor mode: the option's, else the object's own (Global without settings)."""
        own = [
            "GLOBAL"
            if p.obj.name in self._shown
            else getattr(object_settings(p.obj), "factor_mode", "GLOBAL")
            for p in self.parts
        ]  # without Hybrid Skin: the one number Blender shows it at
        return [self.options.factor_mode or mode for mode in own]

    def factor_record(self) -> dict:
        """The sidecar's ``deform_factor`` mode and source: what the texture plays and where it came from."""
        if self.kind is Kind.VERTEX:
            modes = set(self._factor_modes())
        else:
            modes = {"AUTO" if self.auto_profile else "GLOBAL"}
        given = self.options.deform_factor is not None or self.options.factor_mode is not None
        return {"mode": modes.pop() if len(modes) == 1 else "MIXED", "source": "bake" if given else "object"}

    def _vertex_factor(self) -> float | None:
        """The factor baked into a VERTEX texture when it is one number for every mesh, else ``None``."""
        if any(mode != "GLOBAL" for mode in self._factor_modes()):
            return None
        values = {self._factor(part.obj).value for part in self.parts}
        return values.pop() if len(values) == 1 else None

