"""Step 5 of the playbook: expected vs measured movement, the CI gate, the decision."""
