"""The live feature: per-object settings, the bind, what Add/Remove change on the object, the viewport."""
