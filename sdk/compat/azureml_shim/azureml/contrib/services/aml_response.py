"""The original's `AMLResponse(message, status_code)`: what an entry script's run() returns to answer
with another HTTP status than 200 (a 400 for a body it cannot read). The serving process answers a
status of 400 or more as an error naming the endpoint and the message, any other as the message
itself (designer/serving/script_host.py)."""
from __future__ import annotations


class AMLResponse:
    def __init__(self, message, status_code: int = 200, response_headers: dict | None = None, json_str: bool = False):
        self.message = message
        self.status_code = int(status_code)
        self.headers = dict(response_headers or {})
        self.json_str = json_str
