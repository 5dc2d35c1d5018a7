"""Step 1 of the playbook: freeze the workload seed, model revision and execution environment."""
