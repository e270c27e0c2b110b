"""Blender's menus for every feature's operators (imports nothing: see menus.py)."""
