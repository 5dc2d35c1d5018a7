"""Quality of pruned models against dense on real text: corpus, pruning, metrics and the study record."""
