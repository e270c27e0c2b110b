"""Bakes of the hybrid result: shape keys per frame and point caches (PC2, MDD)."""
