"""An endpoint's entry script, the original's scoring contract: `init()` once when the serving
process loads the endpoint, `run(raw_data)` per request with the request's body as text, its
return value answered as JSON (designer/serving/scripts.py runs it, in a process of its own).

Checked here when it is deployed, so that a script that cannot run is refused with its line
rather than found at the first request: text of at most MAX_BYTES, Python that compiles, with
top-level functions `init()` and `run(raw_data)`; its file name (what its errors name) a plain
`name.py`. It is code that runs on the serving machines: deploying one needs the permission that
uploading a component needs (Can add component).
"""
from __future__ import annotations

import ast
import re

from designer.pipelines.models.components import may_run_components
from designer.pipelines.registry.service import RegistryError

MAX_BYTES = 256 * 1024
DEFAULT_NAME = "score.py"
NAME_RULE = "a file name of 1 to 64 letters, digits or '_' ending in .py (e.g. pytorch_score.py)"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}\.py$")


def check(owner, source, name=None) -> tuple[str, str]:
    """(source, file name) of an entry script that may be deployed; RegistryError naming the field."""
    name = DEFAULT_NAME if name in (None, "") else name
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise RegistryError(f"entry_script_name: {str(name)[:80]!r} is not usable: it is {NAME_RULE}")
    if not isinstance(source, str):
        raise RegistryError(f"entry_script: the script's Python source (text), got {type(source).__name__}")
    if len(source.encode("utf-8", "replace")) > MAX_BYTES:
        raise RegistryError(f"entry_script: the script is {len(source.encode('utf-8', 'replace')) / 1024:.0f} KB, "
                            f"the limit is {MAX_BYTES // 1024} KB (put large files in the model's folder)", status=413)
    if not may_run_components(owner):
        raise RegistryError("entry_script: an entry script is code that runs on the serving machines: deploying one "
                            "needs the permission to add components (Can add component, granted in the admin)", status=403)
    try:
        tree = ast.parse(source, filename=name)
    except SyntaxError as e:
        where = f", line {e.lineno}:" if e.lineno else " cannot be compiled:"  # a NUL byte has no line
        raise RegistryError(f"entry_script: {name}{where} {e.msg}") from None
    except ValueError as e:  # a NUL byte (older Pythons)
        raise RegistryError(f"entry_script: {name} cannot be compiled: {e}") from None
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    missing = [f for f in ("init()", "run(raw_data)") if f.split("(")[0] not in functions]
    if missing:
        raise RegistryError(f"entry_script: {name} defines no {' and no '.join(missing)} at its top level: "
                            "an entry script has init() (called once) and run(raw_data) (called per request)")
    run = functions["run"]
    if isinstance(run, ast.AsyncFunctionDef) or not (run.args.args or run.args.posonlyargs or run.args.vararg):
        raise RegistryError(f"entry_script: {name}, line {run.lineno}: run must be a plain function taking the "
                            "request's body, run(raw_data)")
    return source, name
