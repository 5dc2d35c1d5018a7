"""Step 3 of the playbook: score the five mechanisms (compute, memory, scheduling, precision, thermal) and propose one fix.

Read it in this order:

- ``rule``: what a rule is (a threshold on one metric, a weight, a fix recipe) and
  ``RuleSet.rule``, the decorator that declares a rule on the metric function it reads;
- ``compute``, ``memory``, ``scheduling``, ``precision``, ``thermal``: each mechanism's
  rules, each directly on its metric, with the fix recipes beside them (a new rule is one
  decorated function in one of these modules);
- ``context``: what a metric reads (``Context``) and answers (``Fact`` or ``Missing``);
  ``evidence``: Nsight Compute and nvidia-smi reports reduced to what the rules read;
  ``roofline``: the machine roofline and each layer's place on it;
- ``rules``: the table, gathered in the playbook's order;
- ``score``: evaluates every rule, ranks the mechanisms, names the winner, its proof and
  its fix (``classify_run``, ``classify_evidence``, ``measure_metric``).

The records it produces live in ``sparsedebug.records.classification``.
"""
