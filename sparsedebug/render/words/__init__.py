"""Phrasing functions: one per fact kind, turning typed record facts into words."""
