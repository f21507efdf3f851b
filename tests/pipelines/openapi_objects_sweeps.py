"""Objects of a user that the API's paths of sweeps can name, for tests/pipelines/test_openapi.py's fuzzing."""
from __future__ import annotations


def objects(user) -> dict[str, dict]:
    """{first path segment after /api/: {path parameter: value}} of objects made here for `user`."""
    return {}
