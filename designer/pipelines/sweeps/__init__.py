"""Sweeps: a pipeline's parameters tuned over trials (HyperDrive's vocabulary), their policies, their pages and API."""
