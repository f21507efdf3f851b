"""The torch side of the designer: model building, data loading and the training recipe.

Imported only from modules' run() (and by `torchrun` for distributed jobs), never by the web
process: everything here may import torch at the top.
"""
import os

# OpenMP threads that spin while waiting collapse when the cores are shared (another worker's
# job, a second training process): 10x slower measured on 2 busy cores. Passive waiting costs
# little on an idle machine. libgomp reads this once, when torch first loads: it only helps a
# process that imports `training` before torch (every designer module that trains or scores does).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
