"""Files sent to a browser, read from disk a piece at a time whatever their size.

Under ASGI (daphne: production and the browser tests) Django reads a response's synchronous
iterator whole into memory before it sends a byte (StreamingHttpResponse.__aiter__ wraps it in
sync_to_async(list)): a FileResponse of 119 MB was 119 MB of the web process, eight at once
1.8 GB. `file_response` gives it an asynchronous iterator instead, which reads CHUNK bytes on a
thread each time the client has taken the last. Under WSGI (the test client, `manage.py` tools)
it is Django's FileResponse as it is.

`model_archive` writes a model version's folder as a .tar.gz into an anonymous temporary file
(gone when closed) and answers that file: the archive is never in memory.
"""
from __future__ import annotations

import asyncio
import tarfile
import tempfile
from pathlib import Path

from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse

CHUNK = 256 * 1024
COMPRESSLEVEL = 1  # model weights hardly compress: level 9 takes six times as long for 2% less


def file_response(request, fileobj, filename: str, content_type: str | None = None) -> FileResponse:
    """`fileobj` (open, binary: a file, or a stream from the artifact store with its `length`) as an
    attachment named `filename`; closed once sent."""
    response = FileResponse(fileobj, as_attachment=True, filename=filename,
                            **({"content_type": content_type} if content_type else {}))
    length = getattr(fileobj, "length", None)  # a stream from the artifact store says its size
    if isinstance(length, int) and "Content-Length" not in response:
        response["Content-Length"] = str(length)
    if isinstance(request, ASGIRequest):
        response.streaming_content = _pieces(fileobj)  # headers (length, name) were set from the file
    return response


async def _pieces(fileobj):
    try:
        while chunk := await asyncio.to_thread(fileobj.read, CHUNK):
            yield chunk
    finally:
        fileobj.close()


def model_archive(request, folder: Path, top: str) -> FileResponse:
    """The files of `folder` as `<top>.tar.gz` (every member under `<top>/`), written to a
    temporary file first."""
    archive = tempfile.TemporaryFile(prefix="designer-download-")
    try:
        with tarfile.open(fileobj=archive, mode="w:gz", compresslevel=COMPRESSLEVEL) as tar:
            for f in sorted(p for p in folder.rglob("*") if p.is_file()):
                tar.add(f, arcname=f"{top}/{f.relative_to(folder).as_posix()}")
        archive.seek(0)
    except BaseException:
        archive.close()
        raise
    return file_response(request, archive, f"{top}.tar.gz", "application/gzip")
