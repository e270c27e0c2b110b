"""Analyze Deformation: skinning artifacts of the active mesh at the current frame."""
