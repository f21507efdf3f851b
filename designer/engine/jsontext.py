"""JSON text from users (request bodies, pipeline files, endpoint requests) read with one readable
reason for whatever cannot be used: json.loads's own refusals (not JSON, not UTF-8, an integer of
thousands of digits, nesting deep enough to exhaust its recursion), and two things it lets
through that break the code after it: nesting deeper than any document here needs (validators
recurse too), text holding a lone UTF-16 surrogate ("\\ud800": no database or file takes it) and
text holding a NUL character ("\\u0000": PostgreSQL's text and JSON cannot store it).
"""
from __future__ import annotations

import json
import sys
from typing import Any

MAX_DEPTH = 64  # levels of [ and {: a pipeline is about 6 deep, a sweep configuration 5


class JsonTextError(ValueError):
    """Why the text cannot be used, to follow "the request body is" or "the file is"."""


def loads(text: str | bytes) -> Any:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise JsonTextError(f"not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    except UnicodeDecodeError:
        raise JsonTextError("not UTF-8 text") from None
    except RecursionError:
        raise JsonTextError(f"nested too deeply: more than {MAX_DEPTH} levels of [ and {{") from None
    except ValueError:  # an integer longer than Python converts
        raise JsonTextError(f"not usable: it holds an integer of more than {sys.get_int_max_str_digits():,} digits") from None
    check(data)
    return data


def check(data: Any) -> None:
    """JsonTextError naming where `data` nests too deeply or holds text that is not Unicode."""
    stack, seen = [(data, "", 0)], set()
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, (dict, list)):  # a YAML alias is the same object again: walked once
            if id(value) in seen:
                continue
            seen.add(id(value))
        if depth > MAX_DEPTH:
            raise JsonTextError(f"nested too deeply: more than {MAX_DEPTH} levels of [ and {{ (at {_short(path)})")
        if isinstance(value, str):
            _text(value, path)
        elif isinstance(value, dict):
            for key, item in value.items():
                _text(key, path)
                stack.append((item, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value))


def _text(value: str, path: str) -> None:
    if "\x00" in value:
        where = f" at {_short(path)}" if path else ""
        raise JsonTextError(f"not usable: it holds a NUL character (\\u0000){where}, which no database stores")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        where = f" at {_short(path)}" if path else ""
        raise JsonTextError(f"not usable: it holds text that is not Unicode{where} (a lone surrogate, \\ud800 to "
                            "\\udfff, without its pair)") from None


def whole_number(text, digits: int = 18) -> int | None:
    """A whole number written as text of at most `digits` ASCII digits (an id, a header), else None:
    "²" is a digit to str.isdigit, not to int; 19 digits may pass what a database stores."""
    if isinstance(text, str) and text.isascii() and text.isdigit() and len(text) <= digits:
        return int(text)
    return None


def _short(path: str) -> str:
    return path if len(path) <= 80 else path[:77] + "..."
