"""What a person names a run or a sweep by: a name, an experiment (a group of runs; the pipeline's
name unless given) and tags ({key: value}, as Azure ML's jobs carry). Each is checked here, with
one refusal naming the field and what it takes, for the API, the pages and the commands alike."""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

from designer.pipelines.models import Source
from designer.pipelines.web import BadRequest

MAX_NAME = 200
MAX_EXPERIMENT = 200
MAX_TAGS = 20
MAX_TAG_KEY = 64
MAX_TAG_VALUE = 256


class LabelError(BadRequest):
    """A name, experiment or tag that cannot be stored: a 400 naming the field."""


@dataclass
class Labels:
    name: str | None = None  # None: the pipeline's name (a sweep's trial: "<sweep> · trial <n>")
    experiment: str | None = None  # None: the pipeline's name
    tags: dict[str, str] = field(default_factory=dict)


def _control(text: str) -> bool:
    return any(unicodedata.category(c) == "Cc" for c in text)


def text(value, what: str, limit: int, blank: bool = False) -> str:
    """`value` stripped, checked to be text of 1 to `limit` characters (0 with `blank`) without
    control characters; LabelError naming `what` otherwise."""
    if not isinstance(value, str):
        shown = repr(value)
        raise LabelError(f"`{what}` is text, got {shown if len(shown) <= 60 else shown[:57] + '...'}")
    value = value.strip()
    if not value and not blank:
        raise LabelError(f"`{what}` is empty: give text of 1 to {limit} characters, or leave `{what}` out")
    if len(value) > limit:
        raise LabelError(f"`{what}` has {len(value)} characters: at most {limit}")
    if _control(value):
        raise LabelError(f"`{what}` holds a control character (a tab, a new line, \\x00...): write it on one line")
    return value


def tags(value) -> dict[str, str]:
    """{key: value} of at most MAX_TAGS tags; a list of keys is tags with an empty value."""
    if isinstance(value, list):
        if not all(isinstance(k, str) for k in value):
            raise LabelError("`tags` is an object of {key: value} texts (or a list of keys)")
        value = dict.fromkeys(value, "")
    if not isinstance(value, dict):
        raise LabelError(f"`tags` is an object of {{key: value}} texts, got {type(value).__name__}")
    if len(value) > MAX_TAGS:
        raise LabelError(f"`tags` has {len(value)} tags: at most {MAX_TAGS}")
    checked: dict[str, str] = {}
    for key, tag in value.items():
        key = text(key, "tags: a key", MAX_TAG_KEY)
        if not isinstance(tag, (str, int, float)) or isinstance(tag, bool):
            raise LabelError(f"`tags`: the value of {key!r} is text (or a number), got {type(tag).__name__}")
        checked[key] = text(str(tag), f"tags: the value of {key[:40]!r}", MAX_TAG_VALUE, blank=True)
    return checked


def from_body(data: dict) -> Labels:
    """The optional `name`, `experiment` and `tags` of a submit's JSON body (null: not given)."""
    name, experiment, given = data.get("name"), data.get("experiment"), data.get("tags")
    return Labels(name=None if name is None else text(name, "name", MAX_NAME),
                  experiment=None if experiment is None else text(experiment, "experiment", MAX_EXPERIMENT),
                  tags={} if given is None else tags(given))


def parse_tag_options(items: list[str]) -> dict[str, str]:
    """`--tag key=value` (or `--tag key`) of a command, as tags; LabelError naming a bad one."""
    pairs = [item.partition("=") for item in items]
    return tags({key.strip(): value for key, _, value in pairs})


def source_of(request) -> str:
    """Where a request submits from, as the product knows it: a personal API token is a script's
    (the API), a signed-in browser's session is the page's. Never what the body claims."""
    return Source.API if getattr(request, "api_token", None) is not None else Source.PAGE
