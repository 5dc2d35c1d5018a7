"""Step 4 of the playbook: shrink a divergence to one focused reproducer and apply one bounded fix."""
