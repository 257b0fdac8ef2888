"""Triton kernels, each beside its pure-torch reference; dispatch takes the kernel on CUDA."""
