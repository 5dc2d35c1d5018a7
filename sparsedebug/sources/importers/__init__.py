"""Importers for real accelerator artifacts: PyTorch profiler traces, Nsight Compute CSV, nvidia-smi CSV logs, TensorRT build logs."""
