"""Read a log file from a byte offset: the live tail used by the API and the page.

`read()` takes a node's logs folder and a log name as a user sent it: the name is resolved by
paths.log_file, so that `../../other-run/...` reads nothing outside the folder."""
from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

from designer.engine import paths
from designer.engine.store import Store

MAX_CHUNK = 256 * 1024


@dataclass
class Chunk:
    text: str
    offset: int  # where this chunk started
    next_offset: int  # pass back to continue
    size: int  # the file's size now


def read(logs_folder: Path, name: str, offset: int = 0, max_bytes: int = MAX_CHUNK) -> Chunk:
    """The log `name` of a logs folder from `offset`; paths.OutsideFolder if the name leaves it."""
    return read_from(paths.log_file(logs_folder, name), offset, max_bytes)


def read_from(path: Path, offset: int = 0, max_bytes: int = MAX_CHUNK) -> Chunk:
    path = Path(path)
    if not path.is_file():
        return Chunk("", offset, offset, 0)
    size = path.stat().st_size
    offset = max(0, min(offset, size))
    with path.open("rb") as f:
        f.seek(offset)
        data = f.read(min(max_bytes, size - offset))
    return _chunk(data, offset, size)


def read_stored(store: Store, key: str, offset: int = 0, max_bytes: int = MAX_CHUNK) -> Chunk:
    """The same from the artifact store (a range read: a 2 GB log costs one chunk)."""
    size = store.size(key)
    if size is None:
        return Chunk("", offset, offset, 0)
    offset = max(0, min(offset, size))
    return _chunk(store.read_range(key, offset, min(max_bytes, size - offset)), offset, size)


def _chunk(data: bytes, offset: int, size: int) -> Chunk:
    # never cut a UTF-8 character in two: hold back an incomplete trailing sequence
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = decoder.decode(data, final=False)
    used = len(data) - len(decoder.getstate()[0])
    return Chunk(text, offset, offset + used, size)
