"""Shared NumPy / PyTorch kernels of the claim-verification suite (no pytest in here)."""
