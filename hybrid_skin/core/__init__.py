"""Pure numpy core of hybrid_skin: no bpy here, arrays in → arrays out.

Modules: :mod:`.dualquat` (quaternions, dual quaternions, Blender's scale split), :mod:`.skinning`
(LBS / DQS / hybrid positions and normals), :mod:`.binding` (influence packing, B-bone segments,
envelopes), and the feature modules built on them.
"""
