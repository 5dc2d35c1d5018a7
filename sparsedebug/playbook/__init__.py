"""The playbook as data, the walk that calls one function per step, and the bundle it writes."""
