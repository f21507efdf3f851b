"""Output reuse keys.

A node's cache key hashes its module kind and version, its parameters (defaults filled in), the
run settings of a distributed module (4 processes do not train the model 1 process trains) and
the identity of each output it reads, and the digest of a component's file and code (its script
edited under the same version runs again). An output's identity names the execution that produced it,
so that a node downstream of a re-executed ("Regenerate output") node runs again too.
"""
from __future__ import annotations

import hashlib
import json


def cache_key(kind: str, version: int, params: dict, inputs: dict[str, str], run_settings: dict | None = None,
              code: str = "") -> str:
    fields = {"kind": kind, "version": version, "params": params, "inputs": inputs}
    if run_settings:  # only distributed modules pass them: other keys stay as they were
        fields["run_settings"] = run_settings
    if code:  # only components have one
        fields["code"] = code
    payload = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def output_identity(producer_cache_key: str, producer_run_id, port: str) -> str:
    return f"{producer_cache_key}:{producer_run_id}:{port}"
