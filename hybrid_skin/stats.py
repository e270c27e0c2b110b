"""Small shared runtime statistics shown in the panel (no bpy data)."""

#: Object name → CPU milliseconds of its last per-frame update.
last_update_ms: dict[str, float] = {}
