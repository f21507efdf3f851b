"""Variables in a component's command, as the original expands them in its launch commands:

    python -m torch.distributed.launch --nproc_per_node $PROCESS_COUNT_PER_NODE --nnodes $NODE_COUNT
      --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port $MASTER_PORT --use_env train.py

`$NAME` or `${NAME}` of a name in VARIABLES, written in the component file's command, is replaced in
each process by that process's value (each node's own NODE_RANK...). Nothing else is expanded, and
no shell ever reads the command: a parameter's value is passed as written (a value holding
"$NODE_RANK" stays that text), so values cannot inject anything. A name the process does not have
(RANK in a per-node launch, whose command starts the ranks itself) is an error naming it.

render() (sdk/component.py) marks the variables of the template with MARK; expand() replaces the
marks in the process that runs the command (supervision/command.py), shown() writes them back for logs.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

# what a process of a component's command is given (supervision/command.py and the launchers set them)
VARIABLES = ("NODE_RANK", "NODE_COUNT", "PROCESS_COUNT_PER_NODE", "WORLD_SIZE", "RANK", "LOCAL_RANK",
             "MASTER_ADDR", "MASTER_PORT")
MARK = "\x1e"  # record separator: no parameter of a pipeline holds one (and it survives JSON and PostgreSQL)
_NAMES = "|".join(VARIABLES)
_WRITTEN = re.compile(rf"\$(?:\{{({_NAMES})\}}|({_NAMES})(?![A-Za-z0-9_]))")
_MARKED = re.compile(rf"{MARK}({_NAMES}){MARK}")


class UnknownVariable(ValueError):
    pass


def mark(template_word: str) -> str:
    """A word of the command's template with its variables marked (before placeholders are filled)."""
    return _WRITTEN.sub(lambda m: f"{MARK}{m.group(1) or m.group(2)}{MARK}", template_word)


def used(command: str) -> list[str]:
    """The variables a command's template names, in order, once each."""
    return list(dict.fromkeys(m.group(1) or m.group(2) for m in _WRITTEN.finditer(command)))


def expand(argv: list[str], env: Mapping[str, str]) -> list[str]:
    """argv with each marked variable replaced by its value in `env`; UnknownVariable names one it lacks."""
    def value(m: re.Match) -> str:
        name = m.group(1)
        if name not in env:
            raise UnknownVariable(f"the command uses ${name}, which this process does not have "
                                  f"(a per-node launch sets NODE_RANK, NODE_COUNT, PROCESS_COUNT_PER_NODE, WORLD_SIZE, "
                                  f"MASTER_ADDR and MASTER_PORT; RANK and LOCAL_RANK are set by the launcher it starts)")
        return env[name]

    return [_MARKED.sub(value, word) for word in argv]


def shown(argv: list[str]) -> list[str]:
    """argv as the component file wrote its variables ($NODE_RANK), for logs."""
    return [_MARKED.sub(lambda m: f"${m.group(1)}", word) for word in argv]
