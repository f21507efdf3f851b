"""Writes the arguments it was given, for tests/sdk/test_azure_component.py."""
import json
import pathlib
import sys

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
pathlib.Path(args["--model_output"], "args.json").write_text(json.dumps(args))
