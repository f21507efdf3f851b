"""The process of one endpoint's entry script: `python script_host.py SCRIPT`, started by a serving
process (scripts.py) with a clean environment and AZUREML_MODEL_DIR set to the version's folder.

It imports SCRIPT and calls its `init()` once, then answers requests one at a time: each is the
request's body as text, given to `run(raw_data)`; its return value goes back as JSON. Frames on
stdin and stdout (4 bytes of length, then the bytes: the body; an answer {"answer": <JSON text>}
or {"error": "<script>, line N, in run: KeyError: 'data'"}); the script's own prints go to stderr,
so they cannot break the frames. The first answer says whether init() worked. It ends at the end
of stdin, and with the serving process (PR_SET_PDEATHSIG). Only the standard library here: the
script imports what it needs (torch, onnxruntime...).
"""
from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import signal
import struct
import sys
import traceback

HEADER = struct.Struct(">I")
MAX_MESSAGE = 500  # characters of an exception's message in an error


def main(argv: list[str]) -> int:
    script = os.path.abspath(argv[0])
    incoming, outgoing = os.fdopen(os.dup(0), "rb", buffering=0), os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)  # print() of the script: to stderr (the serving process's log), never into the frames
    sys.path[0] = os.path.dirname(script)  # as the original: the script's folder, not this one's
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:  # not Linux: the end of stdin ends it
        pass
    try:
        module = _load(script)
        module.init()
    except BaseException as e:
        send(outgoing, {"error": where(e, script, "init")})
        return 1
    send(outgoing, {"ready": True})
    while True:
        body = receive(incoming)
        if body is None:
            return 0
        send(outgoing, answer(module, body.decode("utf-8"), script))


def _load(script: str):
    name = os.path.splitext(os.path.basename(script))[0]
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def answer(module, raw_data: str, script: str) -> dict:
    try:
        result = module.run(raw_data)
    except BaseException as e:  # SystemExit too: the script's failure is this request's answer
        return {"error": where(e, script, "run")}
    if type(result).__name__ == "AMLResponse" and isinstance(getattr(result, "status_code", None), int):
        if 400 <= result.status_code <= 599:  # the original's AMLResponse(message, status): the script's refusal
            return {"error": f"{os.path.basename(script)}: {str(result.message)[:MAX_MESSAGE * 4]}",
                    "status": result.status_code}
        result = result.message
    try:
        return {"answer": json.dumps(result, default=_plain, allow_nan=False)}
    except (TypeError, ValueError) as e:
        return {"error": f"{os.path.basename(script)}: run() returned {_kind(result)}, which cannot be answered as "
                         f"JSON ({e})"}


def _plain(value):
    """NumPy arrays and numbers, torch tensors: as lists and numbers."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _kind(value) -> str:
    return f"a {type(value).__name__}"


def where(error: BaseException, script: str, function: str) -> str:
    """'score.py, line 12, in run: KeyError: 'data'': the deepest line of the script in the traceback."""
    name = os.path.basename(script)
    message = f"{type(error).__name__}: {str(error)[:MAX_MESSAGE]}".rstrip(": ")
    if isinstance(error, SyntaxError) and error.filename and os.path.abspath(error.filename) == script:
        return f"{name}, line {error.lineno}: {message}"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if os.path.abspath(f.filename) == script]
    if not frames:
        return f"{name}, in {function}: {message}"
    return f"{name}, line {frames[-1].lineno}, in {frames[-1].name}: {message}"


def send(stream, message: dict) -> None:
    data = json.dumps(message).encode()
    stream.write(HEADER.pack(len(data)) + data)


def receive(stream) -> bytes | None:
    header = _exactly(stream, HEADER.size)
    return None if header is None else _exactly(stream, HEADER.unpack(header)[0])


def _exactly(stream, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
