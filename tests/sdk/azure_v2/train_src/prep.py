"""Copies its one input file to its output file, upper-cased (tests/sdk/test_azure_component.py)."""
import pathlib
import sys

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
pathlib.Path(args["--output_data"]).write_text(pathlib.Path(args["--input_data"]).read_text().upper())
