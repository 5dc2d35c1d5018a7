"""Renderers: pure functions from records to rich tables or text."""
