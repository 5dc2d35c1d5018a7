"""The built-in replay: workloads, weights, lowering, the executor and equal-latency narrowing."""
