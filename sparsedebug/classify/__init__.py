"""Step 3 of the playbook: score the five mechanisms (compute, memory, scheduling, precision, thermal) and propose one fix."""
