"""Rich renderables and terminal text for each record."""
