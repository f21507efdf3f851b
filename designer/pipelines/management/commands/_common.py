from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from designer.engine import graph


def owner(username: str, create: bool = True):
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is None:
        if not create:
            raise CommandError(f"no user named {username!r}")
        user = User.objects.create_user(username)  # no password: headless only until one is set
    return user


def problems_text(problems) -> str:
    return "\n".join(f"  - {p}" for p in problems)


def read_pipeline_file(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise CommandError(f"cannot read {path}: {e.strerror}")
    try:
        return graph.parse_text(raw)
    except graph.PipelineInvalid as e:
        raise CommandError(f"{path} cannot be read:\n{problems_text(e.problems)}")
