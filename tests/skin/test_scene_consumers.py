"""Issue 26 §1: what reads a character with Hybrid Skin sees what the viewport shows — Blender's own hybrid.

Each consumer (clothing, Boolean cutters, Geometry Nodes, vertex parents, constraints, hair, instances, ...)
is built twice: once on the character with Hybrid Skin, once on its *native twin* — a plain copy that
Blender deforms by its own exact hybrid (an LBS Armature modifier and a Preserve Volume one with Multi
Modifier mixing by a vertex group of the same factors; ``tests.support.scenes.native_twin``). Both are
evaluated by Blender at a bent and twisted frame and must agree. With the GPU preview the display must step
aside by itself for each of them (Blender's exact stack draws, so they read the pose), and must keep
drawing for references that read only the object's transform (a camera tracking it).
"""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from tests.robustness.bake_scene import rig
from tests.robustness.helpers import activate, assert_close, modules
from tests.support.scenes import make_cylinder, native_twin

FRAME = 6  # the rig's keyed bend (100°) and twist (90°)


def world_positions(obj: bpy.types.Object) -> np.ndarray:
    depsgraph = bpy.context.evaluated_depsgraph_get()
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.data
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float64)
    mesh.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    matrix = np.array(evaluated.matrix_world)
    return co @ matrix[:3, :3].T + matrix[:3, 3]


def sorted_rows(points: np.ndarray) -> np.ndarray:
    """Rows in lexicographic order (a Boolean result's vertex order is its own), rounded to 1e-5."""
    rounded = np.round(points, 5)
    return rounded[np.lexsort(rounded.T[::-1])]


def corner_normals(obj: bpy.types.Object) -> np.ndarray:
    mesh = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    out = np.empty(len(mesh.loops) * 3, dtype=np.float32)
    mesh.corner_normals.foreach_get("vector", out)
    return out.reshape(-1, 3)


def _bind_at_rest(arm: bpy.types.Object, consumer: bpy.types.Object, modifier: str, operator) -> None:
    """Surface Deform and Mesh Deform bind to the target as it is now: bind at the rest pose."""
    arm.data.pose_position = "REST"
    bpy.context.view_layer.update()
    with bpy.context.temp_override(object=consumer, active_object=consumer):
        assert operator(modifier=modifier) == {"FINISHED"}
    arm.data.pose_position = "POSE"
    bpy.context.view_layer.update()


# --------------------------------------------------------------------------------- the consumers
def shrinkwrap_shirt(target, arm):
    shirt = make_cylinder(f"Shirt on {target.name}", radius=0.32, height=1.4, rings=10, segments=16)
    shirt.location.z = 0.3
    mod = shirt.modifiers.new("Shrinkwrap", "SHRINKWRAP")
    mod.target, mod.offset = target, 0.02
    return shirt, world_positions


def surface_deform_strap(target, arm):
    strap = make_cylinder(f"Strap on {target.name}", radius=0.26, height=0.4, rings=4, segments=16)
    strap.location.z = 0.8
    strap.modifiers.new("SurfaceDeform", "SURFACE_DEFORM").target = target
    _bind_at_rest(arm, strap, "SurfaceDeform", bpy.ops.object.surfacedeform_bind)
    return strap, world_positions


def mesh_deform_cage(target, arm):
    inner = make_cylinder(f"Inside {target.name}", radius=0.12, height=1.6, rings=12, segments=8)
    inner.location.z = 0.2
    mod = inner.modifiers.new("MeshDeform", "MESH_DEFORM")
    mod.object, mod.precision = target, 4
    _bind_at_rest(arm, inner, "MeshDeform", bpy.ops.object.meshdeform_bind)
    return inner, world_positions


def data_transfer_normals(target, arm):
    sleeve = make_cylinder(f"Sleeve on {target.name}", radius=0.27, height=1.6, rings=10, segments=12)
    mod = sleeve.modifiers.new("DataTransfer", "DATA_TRANSFER")
    mod.object, mod.use_loop_data = target, True
    mod.data_types_loops = {"CUSTOM_NORMAL"}
    mod.loop_mapping = "POLYINTERP_NEAREST"
    return sleeve, corner_normals


def boolean_cutter(target, arm):
    block = make_cylinder(f"Block cut by {target.name}", radius=0.4, height=0.6, rings=2, segments=8)
    block.location = (0.15, 0.0, 0.7)
    mod = block.modifiers.new("Boolean", "BOOLEAN")
    mod.operation, mod.object = "DIFFERENCE", target
    return block, lambda obj: sorted_rows(world_positions(obj))


def _geometry_nodes_reader(name: str) -> bpy.types.NodeTree:
    tree = bpy.data.node_groups.new(name, "GeometryNodeTree")
    tree.interface.new_socket("Body", in_out="INPUT", socket_type="NodeSocketObject")
    tree.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    group_in, group_out = tree.nodes.new("NodeGroupInput"), tree.nodes.new("NodeGroupOutput")
    info = tree.nodes.new("GeometryNodeObjectInfo")
    info.transform_space = "RELATIVE"
    tree.links.new(group_in.outputs["Body"], info.inputs["Object"])
    tree.links.new(info.outputs["Geometry"], group_out.inputs["Geometry"])
    return tree


def geometry_nodes_input(target, arm):
    """A Geometry Nodes modifier whose Object input is the character (an ID property of the modifier)."""
    reader = make_cylinder(f"Nodes reading {target.name}", rings=2, segments=4)
    tree = _geometry_nodes_reader(f"Read {target.name}")
    mod = reader.modifiers.new("Nodes", "NODES")
    mod.node_group = tree
    identifier = tree.interface.items_tree["Body"].identifier
    interface = getattr(getattr(mod, "properties", None), "inputs", None)
    if interface is not None:  # Blender 5.1 and later
        getattr(interface, identifier).value = target
    else:
        mod[identifier] = target
    return reader, world_positions


def geometry_nodes_object_info(target, arm):
    """An Object Info node that names the character itself (the node group references it)."""
    reader = make_cylinder(f"Object Info of {target.name}", rings=2, segments=4)
    tree = _geometry_nodes_reader(f"Info {target.name}")
    info = next(n for n in tree.nodes if n.bl_idname == "GeometryNodeObjectInfo")
    for link in list(tree.links):
        if link.to_node == info:
            tree.links.remove(link)
    info.inputs["Object"].default_value = target
    reader.modifiers.new("Nodes", "NODES").node_group = tree
    return reader, world_positions


def vertex_parent(target, arm):
    child = bpy.data.objects.new(f"Child of {target.name}", None)
    bpy.context.scene.collection.objects.link(child)
    child.parent, child.parent_type = target, "VERTEX"
    child.parent_vertices = (len(target.data.vertices) // 2, 0, 0)
    return child, lambda obj: np.array(obj.matrix_world.translation)


def vertex_group_constraint(target, arm):
    follower = bpy.data.objects.new(f"Follows {target.name}", None)
    bpy.context.scene.collection.objects.link(follower)
    con = follower.constraints.new("COPY_LOCATION")
    con.target, con.subtarget = target, "Bone1"
    return follower, lambda obj: np.array(obj.matrix_world.translation)


def hair(target, arm):
    """Hair on the character itself: a particle system after its Armature modifier. Legacy particles
    follow the deformation through deform-only modifiers unless they use the modifier stack: with Hybrid
    Skin's Geometry Nodes parts they must (the add-on says so, see the test below)."""
    target.modifiers.new("Hair", "PARTICLE_SYSTEM")
    settings = target.particle_systems[-1].settings
    settings.type, settings.count, settings.hair_length, settings.emit_from = "HAIR", 24, 0.1, "FACE"
    settings.use_modifier_stack = True

    def roots(obj):
        evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        psys = evaluated.particle_systems[-1]
        return np.array([psys.co_hair(evaluated, particle_no=i, step=0) for i in range(24)])

    return target, roots


def collision(target, arm):
    """Collision on the character: what a cloth simulation collides with is its evaluated mesh."""
    target.modifiers.new("Collision", "COLLISION")
    return target, world_positions


def collection_instance(target, arm):
    """The character's collection instanced by an empty (a crowd, a set dressing)."""
    holder = bpy.data.collections.get("Character") or bpy.data.collections.new("Character")
    if holder.name not in bpy.context.scene.collection.children:
        bpy.context.scene.collection.children.link(holder)
    for collection in list(target.users_collection):
        collection.objects.unlink(target)
    holder.objects.link(target)
    if bpy.data.objects.get("Instancer") is None:
        instancer = bpy.data.objects.new("Instancer", None)
        instancer.instance_type, instancer.instance_collection = "COLLECTION", holder
        instancer.location.x = 3.0
        bpy.context.scene.collection.objects.link(instancer)

    return target, _instance_points(target)


def particle_instances(target, arm):
    """Particles of another object that show the character (render as Object)."""
    emitter = make_cylinder(f"Emitter of {target.name}", radius=0.1, height=0.1, rings=2, segments=4)
    emitter.location.x = 4.0
    emitter.modifiers.new("Particles", "PARTICLE_SYSTEM")
    settings = emitter.particle_systems[-1].settings
    settings.count, settings.frame_start, settings.frame_end, settings.lifetime = 2, 1, 1, 1000
    settings.physics_type, settings.render_type, settings.instance_object = "NO", "OBJECT", target
    settings.use_rotation_instance = True
    return emitter, _instance_points(target)


def _instance_points(target):
    def instanced(obj):
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for inst in depsgraph.object_instances:
            if inst.is_instance and inst.object.original == target:
                mesh = inst.object.data
                co = np.array([v.co[:] for v in mesh.vertices])
                matrix = np.array(inst.matrix_world)
                return co @ matrix[:3, :3].T + matrix[:3, 3]
        raise AssertionError(f"no instance of {target.name}")

    return instanced


CONSUMERS = [
    particle_instances,
    shrinkwrap_shirt,
    surface_deform_strap,
    mesh_deform_cage,
    data_transfer_normals,
    boolean_cutter,
    geometry_nodes_input,
    geometry_nodes_object_info,
    vertex_parent,
    vertex_group_constraint,
    hair,
    collision,
    collection_instance,
]


@pytest.mark.parametrize("display", ["EVALUATED", "GPU"])
@pytest.mark.parametrize("consumer", CONSUMERS, ids=lambda c: c.__name__)
def test_what_reads_the_character_sees_blenders_hybrid(addon, display, consumer):
    hs = modules(addon)
    arm, body = rig(display=display)
    body.hybrid_skin.deform_factor = 0.6
    bpy.context.scene.frame_set(FRAME)
    if display == "GPU":
        assert hs.setup.gpu_draws(body), "nothing reads it yet: the preview draws"
    with native_twin(body, 0.6) as twin:
        ours, measure = consumer(body, arm)
        theirs, _ = consumer(twin, arm)
        bpy.context.scene.frame_set(FRAME)
        activate(body)
        got, expected = measure(ours), measure(theirs)
        assert np.abs(expected - measure(theirs if theirs is not twin else twin)).max() == 0.0
        assert_close(np.atleast_2d(got), np.atleast_2d(expected), f"{consumer.__name__} ({display})")
        assert not hs.setup.gpu_draws(body), "Blender's exact stack must draw what something reads"
        if display == "GPU":
            assert hs.setup.load(body).aside in (hs.setup.READ, hs.setup.TAIL)


def test_the_rest_pose_would_differ(addon):
    """Guard: at the test frame a consumer that read the rest mesh would be far off (or the tests above
    could not fail)."""
    arm, body = rig(display="GPU")
    bpy.context.scene.frame_set(FRAME)
    shirt, measure = shrinkwrap_shirt(body, arm)
    posed = measure(shirt)
    arm.data.pose_position = "REST"
    bpy.context.view_layer.update()
    assert np.abs(measure(shirt) - posed).max() > 0.1


def test_a_camera_tracking_the_character_leaves_the_preview_drawing(addon):
    """A reference to the object's transform only (Track To, a Hook, a Mirror's mirror object) reads no
    geometry: the preview keeps drawing."""
    hs = modules(addon)
    arm, body = rig(display="GPU")
    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    bpy.context.scene.collection.objects.link(camera)
    camera.constraints.new("TRACK_TO").target = body
    mirror = make_cylinder("Mirrored", rings=2, segments=4).modifiers.new("Mirror", "MIRROR")
    mirror.mirror_object = body
    bpy.context.view_layer.update()
    assert hs.setup.gpu_draws(body)


def test_the_preview_draws_again_when_the_reader_is_gone(addon, capfd):
    hs = modules(addon)
    arm, body = rig(display="GPU")
    shirt, _ = shrinkwrap_shirt(body, arm)
    bpy.context.view_layer.update()
    assert not hs.setup.gpu_draws(body) and body.display_type != "BOUNDS"
    out = capfd.readouterr().out
    assert f"'{shirt.name}' reads it (modifier 'Shrinkwrap'): Blender draws '{body.name}'" in out
    bpy.data.objects.remove(shirt)
    bpy.context.view_layer.update()
    assert hs.setup.gpu_draws(body) and body.display_type == "BOUNDS"


@pytest.mark.parametrize("display", ["EVALUATED", "GPU"])
def test_bake_action_of_a_follower_bakes_where_it_followed_the_hybrid(addon, display):
    """Bake Action (visual keying) of an empty that follows one of the character's vertex groups keys
    where it sat on Blender's hybrid at every frame."""
    arm, body = rig(display=display)
    with native_twin(body, 0.6) as twin:
        follower, measure = vertex_group_constraint(body, arm)
        reference, _ = vertex_group_constraint(twin, arm)
        expected = {}
        for frame in (2, 6, 10):
            bpy.context.scene.frame_set(frame)
            expected[frame] = measure(reference)
        activate(follower)
        assert bpy.ops.nla.bake(
            frame_start=1, frame_end=12, only_selected=True, visual_keying=True, clear_constraints=True,
            bake_types={"OBJECT"},
        ) == {"FINISHED"}
        for frame, where in expected.items():
            bpy.context.scene.frame_set(frame)
            assert np.abs(np.array(follower.matrix_world.translation) - where).max() < 1e-5, frame
    assert np.abs(expected[2] - expected[10]).max() > 0.1, "the follower moves (or the test is void)"


def test_particles_that_need_deform_only_modifiers_are_named_once(addon, capfd):
    """Emitted from faces without Use Modifier Stack, legacy particles would sit off the hybrid (Blender
    maps them through deform-only modifiers, as with any Geometry Nodes or Vertex Weight modifier above):
    the add-on names the setting once and changes nothing of the user's."""
    arm, body = rig()
    body.modifiers.new("Hair", "PARTICLE_SYSTEM")
    settings = body.particle_systems[-1].settings
    settings.type, settings.emit_from = "HAIR", "FACE"
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    said = capfd.readouterr().out
    assert said.count("turn on Use Modifier Stack") == 1, said
    assert not settings.use_modifier_stack
    settings.use_modifier_stack = True
    bpy.context.view_layer.update()
    assert "Use Modifier Stack" not in capfd.readouterr().out
