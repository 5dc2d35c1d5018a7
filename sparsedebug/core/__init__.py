"""What every playbook step uses: errors, atomic io, statistics, timing, packaged data."""
