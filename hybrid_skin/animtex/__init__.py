"""Animation textures (vertex, bone matrix, bone dual quaternion) for GPU crowds, and their crowd preview."""
