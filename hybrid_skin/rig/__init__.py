"""The shared foundation every feature stands on: the per-object settings, the bind and its
cache, weights as the Armature modifier receives them, the deform factor and its one resolver, the
modifier stack as Hybrid Skin reads it, the setup Hybrid Skin puts on an object (Blender's exact hybrid)
and the handlers that keep it whole, taking a bake off, and Blender's own deformation as the oracle.

Layers, top to bottom: ``cli`` → features (``skin``, ``bake``, ``analyze``, ``animtex``) → ``draw`` → ``rig``
→ ``bridge`` → ``core``. A feature never imports another feature.
"""
