"""YAML a person writes (a component.yaml, a sweep configuration) read at a cost bounded by its
size, and any value of it quoted in a message at a bounded length.

YAML's anchors and aliases (`&a`, `*a`) repeat a node without copying it: ten levels of ten
aliases are 481 bytes that stand for 10^10 values ("billion laughs"). PyYAML builds each node
once, so reading is cheap; what is not is anything that walks the value as if expanded (a
message quoting it, a loop over it). So:

  * `load()` counts the nodes the document stands for with its aliases expanded, from the node
    graph (each node counted once, a repeated one by its size): more than MAX_NODES, or an alias
    inside itself, is refused (YamlTextError) before a value is built;
  * a key given twice in one mapping is refused naming it (YAML keeps the later silently);
  * a value holding a NUL character (`"\\0"`) is refused naming it: PostgreSQL's text cannot store it;
  * `short(value)` is the repr of a value cut to MAX_SHOWN characters, at a cost bounded
    whatever the value holds (reprlib: a few items per level, a few levels).

Imports nothing of the project: sdk/component.py and designer/engine/sweep_text.py both use it.
"""
from __future__ import annotations

import reprlib

import yaml

MAX_NODES = 100_000  # values (scalars, lists, mappings) a document may stand for with its aliases expanded
MAX_SHOWN = 80  # characters of a user's value in a message
MERGE_KEY = "tag:yaml.org,2002:merge"

_repr = reprlib.Repr()
_repr.maxlevel, _repr.maxlist, _repr.maxdict, _repr.maxtuple, _repr.maxset = 3, 6, 6, 6, 6
_repr.maxstring, _repr.maxother, _repr.maxlong = MAX_SHOWN, MAX_SHOWN, 40


class YamlTextError(ValueError):
    """Why the text cannot be used; `where` is the dotted path of the key it is about ("" for the
    whole document), `line` its line (1-based) when known."""

    def __init__(self, message: str, where: str = "", line: int | None = None):
        super().__init__(message)
        self.where, self.line = where, line


def short(value, limit: int = MAX_SHOWN) -> str:
    """repr(value) in at most `limit` characters, built at a bounded cost (a list of a billion
    items, a string of a million characters: a few of them, then '...')."""
    if isinstance(value, str):
        text = repr(value[:limit])
        return text if len(value) <= limit and len(text) <= limit else text[:limit - 4] + text[0] + "..."
    text = _repr.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def load(text: str | bytes, loader: type[yaml.SafeLoader] = yaml.SafeLoader, max_nodes: int = MAX_NODES):
    """The value of a YAML document (None for an empty one), built only after its node graph was
    checked: YamlTextError for too many nodes with the aliases expanded, an alias inside itself,
    or a key given twice. PyYAML's own errors (yaml.YAMLError) pass through."""
    reader = loader(text)
    try:
        node = reader.get_single_node()
        if node is None:
            return None
        check_nodes(node, max_nodes)
        return reader.construct_document(node)
    finally:
        reader.dispose()


def check_nodes(root: yaml.Node, max_nodes: int = MAX_NODES) -> int:
    """How many nodes `root` stands for with its aliases expanded (YamlTextError past max_nodes);
    also refuses a key given twice in one mapping (merge keys `<<` aside) and an alias inside
    itself. Each distinct node is looked at once: the cost is that of the text, not of its expansion."""
    sizes: dict[int, int] = {}  # id(node) -> expanded size; -1 while its children are being counted
    stack: list[tuple[yaml.Node, str, bool]] = [(root, "", False)]
    while stack:
        node, path, children_done = stack.pop()
        key = id(node)
        if children_done:
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            if total > max_nodes:
                at = f" (at {path})" if "[" in path or "." in path else ""
                raise YamlTextError(f"it stands for more than {max_nodes:,} values once its aliases (*name) are "
                                    f"expanded{at}; write the values out instead", _top(path), node.start_mark.line + 1)
            sizes[key] = total
            continue
        if key in sizes:
            if sizes[key] < 0:
                raise YamlTextError("an alias (*name) refers to the node it is inside of", path, node.start_mark.line + 1)
            continue
        sizes[key] = -1
        stack.append((node, path, True))
        if isinstance(node, yaml.ScalarNode) and "\x00" in node.value:
            raise YamlTextError(f"{path or 'the document'} holds a NUL character (\\0), which no database stores; "
                                "remove it", _top(path), node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            _unique_keys(node, path)
            for k, v in node.value:
                where = _join(path, k)
                stack.append((k, where, False))
                stack.append((v, where, False))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{path}[{i}]", False) for i, item in enumerate(node.value))
    return sizes[id(root)]


def _children(node: yaml.Node):
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            yield k
            yield v
    elif isinstance(node, yaml.SequenceNode):
        yield from node.value


def _top(path: str) -> str:
    """The top-level key a path starts with: the field a person wrote."""
    return path.split(".", 1)[0].split("[", 1)[0]


def _join(path: str, key: yaml.Node) -> str:
    name = short(key.value, 40) if not isinstance(key, yaml.ScalarNode) else key.value
    name = name if len(name) <= 40 else name[:37] + "..."
    return f"{path}.{name}" if path else name


def _unique_keys(node: yaml.MappingNode, path: str) -> None:
    seen: dict[tuple[str, str], int] = {}
    for k, _ in node.value:
        if not isinstance(k, yaml.ScalarNode) or k.tag == MERGE_KEY:
            continue
        line = k.start_mark.line + 1
        if (k.tag, k.value) in seen:
            raise YamlTextError(f"declared twice (lines {seen[k.tag, k.value]} and {line})", _join(path, k), line)
        seen[k.tag, k.value] = line
