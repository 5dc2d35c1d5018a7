"""Every persisted result as a pydantic record on one base with schema_version."""
