"""A sweep's configuration as text (YAML, of which JSON is a part) read into the value that
sweep_config.check() checks: a syntax error names its line and column; nesting too deep, an
integer too long or text that is not Unicode are named too, never raised as they are. Read by
sdk.yamltext: a key given twice is refused naming it, and aliases that stand for more than
yamltext.MAX_NODES values are refused before anything is built from them."""
from __future__ import annotations

import re

import yaml

from designer.engine import jsontext
from designer.engine.sweep_checks import SweepConfigInvalid, SweepProblem
from sdk import yamltext


class _Loader(yaml.SafeLoader):  # YAML 1.1 reads `1e-3` (no dot) as a string: here it is the number a user means
    pass


_Loader.add_implicit_resolver("tag:yaml.org,2002:float",
                              re.compile(r"^[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789."))


def parse_text(text: str | bytes) -> dict:
    """The configuration in YAML (JSON is YAML too) -> its value (check() refuses anything but a mapping);
    a syntax error names its line and column."""
    try:
        raw = yamltext.load(text, _Loader)  # a SafeLoader; bytes are read as UTF-8 (or UTF-16 with a BOM)
    except yamltext.YamlTextError as e:
        field = e.where.split(".")[0].split("[")[0] or "configuration"
        where = f"{e.where} (line {e.line})" if e.where else f"line {e.line}"
        raise SweepConfigInvalid([SweepProblem(f"{where}: {e}", "syntax", field=field)]) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise SweepConfigInvalid([SweepProblem(f"{where}{e.problem or e.context} (not valid YAML or JSON)", "syntax")])
    except yaml.YAMLError as e:  # e.g. bytes that are not UTF-8
        raise SweepConfigInvalid([SweepProblem(f"the configuration is not valid YAML or JSON: {e}", "syntax")])
    except (RecursionError, ValueError):  # thousands of nested levels; an integer of thousands of digits
        raise SweepConfigInvalid([SweepProblem("the configuration is nested too deeply or holds an integer too long "
                                               "to read", "syntax")]) from None
    try:
        jsontext.check(raw)  # (YAML aliases too: each node walked once)
    except jsontext.JsonTextError as e:
        raise SweepConfigInvalid([SweepProblem(f"the configuration is {e}", "syntax")]) from None
    return raw


def entry_lines(text: str | bytes) -> dict[int, int]:
    """{index: line (1-based)} of each item of the text's parameter_space, for a problem to say
    where it is; {} when the text has none (or is not YAML: parse_text() names that). Read from
    the node graph, whose cost is the text's: aliases are never expanded."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except (yaml.YAMLError, RecursionError, ValueError):
        return {}
    for key, value in root.value if isinstance(root, yaml.MappingNode) else ():
        if isinstance(key, yaml.ScalarNode) and key.value == "parameter_space" and isinstance(value, yaml.SequenceNode):
            return {i: item.start_mark.line + 1 for i, item in enumerate(value.value)}
    return {}
