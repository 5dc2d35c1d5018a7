"""Importers for real accelerator artifacts: PyTorch profiler traces, Nsight Compute CSV,
nvidia-smi CSV logs and TensorRT build logs, plus the dense-fallback counter that
compares two runs."""
