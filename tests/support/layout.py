"""Drawing the add-on's panels, menus and dialogs headless: a layout that records what is drawn.

The bpy module has no window to draw a ``UILayout`` in, so a panel's ``draw`` gets a
:class:`RecordingLayout` instead: every ``operator()``, ``prop()``, ``prop_search()`` and ``label()``
call is recorded (sub-layouts from ``row()``, ``column()``, ``box()`` ... share the record), and the
checks Blender would do while drawing are done here: an operator button must name a registered
operator, a property must exist on its data, an operator property set on a button must exist.
"""

from __future__ import annotations

import inspect
import types
from dataclasses import dataclass, field
from typing import Any

import bpy


def operator_class_name(idname: str) -> str:
    """``"hybrid_skin.add"`` → ``"HYBRID_SKIN_OT_add"``, the name Blender registers the class under."""
    module, _, name = idname.partition(".")
    return f"{module.upper()}_OT_{name}"


def operator_properties(idname: str) -> bpy.types.Struct:
    """The RNA of an operator's own properties (what ``layout.operator(...).x = ...`` sets)."""
    module, _, name = idname.partition(".")
    return getattr(getattr(bpy.ops, module), name).get_rna_type()


@dataclass
class Call:
    kind: str  # "operator", "prop", "prop_search", "label", "separator", "menu", "popover"
    args: tuple
    kwargs: dict
    #: Operator properties set on the button (``layout.operator(...).target = "PC2"``).
    properties: dict = field(default_factory=dict)

    @property
    def text(self) -> str | None:
        return self.kwargs.get("text")


class _OperatorButton:
    """What ``layout.operator()`` returns: setting a property checks it exists on the operator."""

    def __init__(self, call: Call, rna_properties: set[str]):
        object.__setattr__(self, "_call", call)
        object.__setattr__(self, "_names", rna_properties)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._names:
            raise AttributeError(f"{self._call.args[0]} has no property {name!r}")
        self._call.properties[name] = value


class RecordingLayout:
    """A stand-in for ``bpy.types.UILayout`` that records every call into the shared ``calls`` list."""

    def __init__(self, calls: list[Call] | None = None):
        self.calls: list[Call] = [] if calls is None else calls
        self.use_property_split = False
        self.use_property_decorate = True
        self.active = True
        self.enabled = True
        self.alert = False
        self.scale_y = 1.0

    # -- sub-layouts share the record -------------------------------------------------------------
    def _child(self, *_args, **_kwargs) -> RecordingLayout:
        return RecordingLayout(self.calls)

    row = column = box = split = column_flow = grid_flow = _child

    # -- items ------------------------------------------------------------------------------------
    def operator(self, idname: str, **kwargs) -> _OperatorButton:
        name = operator_class_name(idname)
        cls = getattr(bpy.types, name, None)
        if cls is None:
            raise AssertionError(f"button for {idname!r}, but no operator {name} is registered")
        call = Call("operator", (idname,), kwargs)
        self.calls.append(call)
        return _OperatorButton(call, {p.identifier for p in operator_properties(idname).properties})

    def prop(self, data, property_name: str, **kwargs) -> None:
        if property_name not in data.bl_rna.properties:
            raise AssertionError(f"{data!r} has no property {property_name!r}")
        self.calls.append(Call("prop", (data, property_name), kwargs))

    def prop_search(self, data, property_name: str, search_data, search_property: str, **kwargs) -> None:
        if property_name not in data.bl_rna.properties:
            raise AssertionError(f"{data!r} has no property {property_name!r}")
        if not hasattr(search_data, search_property):
            raise AssertionError(f"{search_data!r} has no collection {search_property!r}")
        self.calls.append(Call("prop_search", (data, property_name, search_data, search_property), kwargs))

    def label(self, **kwargs) -> None:
        self.calls.append(Call("label", (), kwargs))

    def separator(self, **kwargs) -> None:
        self.calls.append(Call("separator", (), kwargs))

    def menu(self, menu: str, **kwargs) -> None:
        if not hasattr(bpy.types, menu):
            raise AssertionError(f"no menu {menu} is registered")
        self.calls.append(Call("menu", (menu,), kwargs))

    # -- what was drawn ---------------------------------------------------------------------------
    def operators(self) -> list[str]:
        return [c.args[0] for c in self.calls if c.kind == "operator"]

    def buttons(self, idname: str) -> list[Call]:
        return [c for c in self.calls if c.kind == "operator" and c.args[0] == idname]

    def props(self) -> list[str]:
        return [c.args[1] for c in self.calls if c.kind in ("prop", "prop_search")]

    def labels(self) -> list[str]:
        return [c.text for c in self.calls if c.kind == "label"]


class Drawn:
    """The ``self`` a ``draw(self, context)`` gets: ``layout`` plus the class's own attributes and methods
    (bound to this object), and any ``values`` given (an operator dialog's property values)."""

    def __init__(self, cls: type, layout: RecordingLayout, **values: Any):
        self._cls = cls
        self.layout = layout
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> Any:
        static = inspect.getattr_static(self._cls, name)
        value = getattr(self._cls, name)
        if isinstance(static, staticmethod | classmethod) or not inspect.isfunction(value):
            return value
        return types.MethodType(value, self)


def draw_panel(panel: type[bpy.types.Panel], context=None) -> RecordingLayout | None:
    """Draw ``panel`` as Blender would: None if its ``poll`` refuses the context, else what it drew."""
    context = bpy.context if context is None else context
    poll = getattr(panel, "poll", None)
    if poll is not None and not poll(context):
        return None
    layout = RecordingLayout()
    panel.draw(Drawn(panel, layout), context)
    return layout


def draw_function(function, context=None) -> RecordingLayout:
    """Call a function appended to a Blender menu (``function(self, context)``)."""
    layout = RecordingLayout()
    function(Drawn(object, layout), bpy.context if context is None else context)
    return layout
