"""Step 2 of the playbook: walk graph -> lower -> kernel -> schedule -> outcome to the first persistent divergence."""
