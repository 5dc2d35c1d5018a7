"""Markdown documents: the review memo and the sparsity deployment report."""
