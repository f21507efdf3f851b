"""What the headless commands share: a database ready on first use, the owner, a pipeline file."""
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from designer.engine import graph, parameters
from designer.engine.problems import labelled
from designer.pipelines.authoring import drafts
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.datasets import service as datasets

DEFAULT_OWNER = "admin"


def ready_database(stderr) -> None:
    """Create the database's tables on a new machine (an empty DESIGNER_DATA_DIR), as `make run`
    does: a headless command is often the first thing a user types there. A database that has
    tables already (a team's PostgreSQL, say) is never migrated behind its administrator's back:
    the command stops and says what to run."""
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if not plan:
        return
    if executor.loader.applied_migrations:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _ in plan[:3]) + (" ..." if len(plan) > 3 else "")
        raise CommandError(f"the database lacks {len(plan)} migration(s) of this version of the code ({names}): "
                           f"apply them first with `.venv/bin/python manage.py migrate` (or `make run`)")
    stderr.write(f"Setting up the database first ({len(plan)} migration(s), as `manage.py migrate` does).")
    call_command("migrate", interactive=False, verbosity=0)


def owner(username: str, stderr):
    """The user named `username`; CommandError if there is none (a typo must not put a run in
    an account nobody signs in to). On a new machine with no user at all, the default owner
    `admin` is created as `make run` creates it (manage.py ensure_admin), its password printed."""
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is None and username == DEFAULT_OWNER and not User.objects.exists():
        call_command("ensure_admin", username=DEFAULT_OWNER, stdout=stderr)
        user = User.objects.filter(username=username).first()
    if user is None:
        known = ", ".join(User.objects.order_by("username").values_list("username", flat=True)[:20]) or "none yet"
        raise CommandError(
            f"--owner {username!r}: there is no user named {username!r} (users: {known}). Create one first:\n"
            f"  .venv/bin/python manage.py createsuperuser --username {username}   (asks for a password)\n"
            f"  or, signed in as an administrator, /admin/ > Users > Add user\n"
            f"  (on a new machine, `.venv/bin/python manage.py ensure_admin` creates the first user, admin)")
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


def datasets_by_name(user, doc: dict, path: str) -> None:
    """The file's datasets given by name (examples/digits.json: "digits") as the user's of that
    name; CommandError naming each one the user has not, before anything is saved or submitted."""
    missing = labelled(datasets.resolve_names(user, doc), doc, get_catalogue(user))
    if missing:
        raise CommandError(f"{path} cannot run, {len(missing)} problem(s):\n{problems_text(missing)}")


def param_values(doc: dict, items: list[str]) -> dict:
    """`--param NAME=VALUE` options as typed values of the pipeline's parameters."""
    declared = {p["name"]: p for p in doc.get("parameters", [])}
    values = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep:
            raise CommandError(f"--param {item!r}: expected NAME=VALUE")
        if name not in declared:
            known = ", ".join(declared) or "none: the pipeline declares no parameters"
            raise CommandError(f"--param {item!r}: the pipeline has no parameter {name!r} (its parameters: {known})")
        try:
            values[name] = parameters.coerce(declared[name], raw)
        except ValueError as e:
            raise CommandError(f"--param {item!r}: {e}")
    return values


def saved_pipeline(user, doc: dict, path: str, stdout):
    """The saved pipeline a headless run (or sweep) of this file belongs to, so that it opens in the
    designer and lists in that pipeline's Runs tab as one submitted from the canvas does
    (drafts.for_run_of_file): found by the name the file gives (an exported file does), else its
    file name; else the file saved as a new pipeline, said on `stdout`. (None, False) for a file
    that cannot be saved: it cannot run either, and submitting it lists its problems."""
    name = doc.get("name") if isinstance(doc.get("name"), str) and doc["name"].strip() else Path(path).stem
    try:
        pipeline, created = drafts.for_run_of_file(user, doc, name)
    except drafts.DraftError:
        return None, False
    if created:
        stdout.write(f"saved as the pipeline {pipeline.name!r} of {user.username} (it had none of that name "
                     "with these modules): its runs open there")
    return pipeline, created
