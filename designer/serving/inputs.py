"""A scoring request's images, from its body: multipart/form-data (every part is an image, in
order, whatever its field name), JSON ({"images": [base64, ...]} or {"image": base64}; a data URL
is accepted too), or the bytes of one image (any other content type, e.g. image/png).

Each image is (filename, bytes); the filename is the part's file name, else its field name,
else "" (JSON). Problems raise RequestError with the HTTP status and a message naming them.
"""
from __future__ import annotations

import base64
import binascii

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from designer.engine import jsontext
from sdk.preprocess import BadImage, image_size


class RequestError(ValueError):
    def __init__(self, status: int, message: str, **details):
        super().__init__(message)
        self.status, self.details = status, details


def images(content_type: str, body: bytes, max_images: int) -> list[tuple[str, bytes]]:
    kind, _ = parse_options_header(content_type or "")
    if kind == b"multipart/form-data":
        found = multipart(content_type, body)
    elif kind == b"application/json" or kind.endswith(b"+json"):
        found = from_json(body)
    elif kind == b"application/x-www-form-urlencoded":  # curl -d @file: its line breaks are gone
        raise RequestError(400, "a form-encoded body cannot carry an image: send files as multipart/form-data "
                                "(curl -F 'image=@file.png'), or the image itself (curl --data-binary @file.png -H 'Content-Type: image/png')")
    elif body:
        found = [("", body)]
    else:
        found = []
    if not found:
        raise RequestError(400, "the request has no image: send files as multipart/form-data, JSON "
                                "{\"images\": [\"<base64>\", ...]}, or one image as the body")
    if len(found) > max_images:
        raise RequestError(413, f"the request has {len(found)} images, the limit is {max_images} per request")
    return found


def pixels(images: list[tuple[str, bytes]], per_image: int, per_request: int) -> int:
    """The pixels the images declare in all (their headers only: nothing is decoded); RequestError
    413 naming the image past `per_image`, or the request past `per_request`."""
    total = 0
    for i, (filename, data) in enumerate(images):
        name = f"image {i + 1} of {len(images)}" + (f" ({filename[:80]!r})" if filename else "")
        try:
            width, height = image_size(data)
        except BadImage as e:
            raise RequestError(e.status, f"{name}: {e}", index=i, filename=filename) from None
        if width * height > per_image:
            raise RequestError(413, f"{name}: the image is {width} x {height} pixels ({width * height / 1e6:.1f} megapixels), "
                                    f"the limit is {per_image / 1e6:g} megapixels per image (setting SERVING_MAX_IMAGE_PIXELS)",
                               index=i, filename=filename)
        total += width * height
    if total > per_request:
        raise RequestError(413, f"the request's {len(images)} images are {total / 1e6:.1f} megapixels in all, the limit is "
                                f"{per_request / 1e6:g} megapixels per request (setting SERVING_MAX_REQUEST_PIXELS)")
    return total


def multipart(content_type: str, body: bytes) -> list[tuple[str, bytes]]:
    _, params = parse_options_header(content_type)
    boundary = params.get(b"boundary")
    if not boundary:
        raise RequestError(400, "multipart/form-data without a boundary in its Content-Type")
    parts = _Parts()
    parser = MultipartParser(boundary, parts.callbacks())
    try:
        parser.write(body)
        parser.finalize()
    except MultipartParseError as e:
        raise RequestError(400, f"the multipart body cannot be read: {e}")
    if not parts.ended:
        raise RequestError(400, "the multipart body ends before its closing boundary (truncated?)")
    return parts.found


class _Parts:
    """python-multipart's callbacks, collecting (filename or field name, bytes) per part."""

    def __init__(self):
        self.found: list[tuple[str, bytes]] = []
        self.ended = False
        self._field, self._value, self._headers, self._data = b"", b"", {}, []

    def callbacks(self) -> dict:
        return {"on_part_begin": self._begin, "on_header_field": self._header_field, "on_header_value": self._header_value,
                "on_header_end": self._header_end, "on_part_data": self._part_data, "on_part_end": self._part_end,
                "on_end": self._end}

    def _begin(self):
        self._headers, self._data = {}, []

    def _header_field(self, data, start, end):
        self._field += data[start:end]

    def _header_value(self, data, start, end):
        self._value += data[start:end]

    def _header_end(self):
        self._headers[self._field.lower()] = self._value
        self._field, self._value = b"", b""

    def _part_data(self, data, start, end):
        self._data.append(data[start:end])

    def _part_end(self):
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        name = options.get(b"filename") or options.get(b"name") or b""
        self.found.append((name.decode("utf-8", "replace"), b"".join(self._data)))

    def _end(self):
        self.ended = True


def from_json(body: bytes) -> list[tuple[str, bytes]]:
    try:
        document = jsontext.loads(body)
    except jsontext.JsonTextError as e:
        raise RequestError(400, f"the body is {e}")
    if isinstance(document, dict) and isinstance(document.get("images"), list):
        encoded = document["images"]
    elif isinstance(document, dict) and "image" in document:
        encoded = [document["image"]]
    else:
        raise RequestError(400, "expected a JSON object with \"images\": a list of base64 strings, or \"image\": one base64 string")
    return [("", decode_base64(i, len(encoded), value)) for i, value in enumerate(encoded)]


def decode_base64(index: int, count: int, value) -> bytes:
    where = f"image {index + 1} of {count}"
    if not isinstance(value, str):
        raise RequestError(400, f"{where}: expected a base64 string, got {type(value).__name__}", index=index)
    if value.startswith("data:") and "," in value:  # a data URL: data:image/png;base64,....
        value = value.split(",", 1)[1]
    try:  # without the line breaks of `base64`'s output
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError) as e:
        raise RequestError(400, f"{where}: not valid base64 ({e})", index=index)
