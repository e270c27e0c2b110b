"""Geometry Nodes trees Hybrid Skin generates: the builder and the descriptions."""
