"""The torch side of the designer: model building, data loading and the training recipe.

Imported only from modules' run() (and by `torchrun` for distributed jobs), never by the web
process: everything here may import torch at the top.
"""
