"""sparsedebug: triage structured (N:M) sparsity deployments from freeze to signed memo."""

__version__ = "0.1.0"
