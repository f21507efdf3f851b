"""Prints lines (a `##metric` line every --every), waits, fails or writes on demand."""
import argparse
import sys
import time
from pathlib import Path

parser = argparse.ArgumentParser()
for flag in ("--lines", "--every"):
    parser.add_argument(flag, type=int, default=0)
parser.add_argument("--sleep", type=float, default=0.0)
for flag in ("--fail", "--write"):
    parser.add_argument(flag, choices=["true", "false"], default="false")
parser.add_argument("--out", required=True)
parser.add_argument("--input")
args = parser.parse_args()

out = sys.stdout
for i in range(1, args.lines + 1):
    out.write(f"line {i} of {args.lines}\n")
    if args.every and i % args.every == 0:
        out.write(f"##metric progress={i / args.lines} step={i // args.every}\n")
out.flush()
time.sleep(args.sleep)
if args.fail == "true":
    raise RuntimeError("chatty was asked to fail")
if args.write == "true":
    text = Path(args.input, "value.txt").read_text() if args.input else ""
    Path(args.out, "value.txt").write_text(f"{text}chatty {args.lines}\n")
print("chatty done")
