"""Compute: the workers, what each offers (cores, GPUs, compute target) and reserving them for a node."""
