"""The catalogue a user sees with components (designer/pipelines/catalogue/service.py): their own uploaded
components and the settings folders' ones; a pipeline keeps the component version it was saved
with; the Timeout run setting; reuse of an unchanged component, a run again once its code changed;
a bad component file stops start-up, naming it."""
import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from designer.engine import graph, paths
from designer.engine import statuses as st
from designer.pipelines.authoring import drafts
from designer.pipelines.catalogue.service import get_catalogue
from designer.pipelines.models import Component, NodeRun, Pipeline
from designer.pipelines.runs import service as runs
from modules import catalogue as module_catalogue
from tests.conftest import may_add_components
from tests.pipes import node, out_path, pipeline

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = 'import sys, pathlib\npathlib.Path(sys.argv[1], "value.txt").write_text("{text}")\nprint("wrote {text}")\n'


def component_yaml(kind="echo_script", version=1, label="Echo script", distributed=False) -> str:
    return textwrap.dedent(f"""\
        kind: {kind}
        label: {label}
        category: Test components
        version: {version}
        distributed: {'true' if distributed else 'false'}
        command: python echo.py {{outputs.out}}
        outputs:
          out: {{type: AnyDirectory, label: Out}}
        params:
          note: {{type: string, default: ""}}
        """)


def write_component(folder: Path, text="v1", **kw) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "component.yaml").write_text(component_yaml(**kw))
    (folder / "echo.py").write_text(SCRIPT.format(text=text))
    return folder / "component.yaml"


def upload(owner, text="v1", **kw) -> Component:
    """A user's component version, stored as an upload stores it (its own folder under ARTIFACT_ROOT)."""
    may_add_components(owner)
    row = Component.objects.create(owner=owner, kind=kw.get("kind", "echo_script"), version=kw.get("version", 1),
                                   label="Echo script", folder="-", file="component.yaml", digest=uuid.uuid4().hex)
    folder = paths.component_dir(settings.ARTIFACT_ROOT, owner.id, row.id)
    write_component(folder, text, **kw)
    row.folder = str(folder.relative_to(settings.ARTIFACT_ROOT))
    row.save()
    return row


def test_a_users_components_are_offered_to_them_only(users, owner_client, stranger_client):
    upload(users["owner"])
    assert get_catalogue(users["owner"]).get("echo_script").label == "Echo script"
    assert get_catalogue(users["stranger"]).get("echo_script") is None
    kinds = {m["kind"]: m for m in owner_client.get("/api/modules").json()["modules"]}
    assert kinds["echo_script"]["timeout_setting"] is True and kinds["echo_script"]["version"] == 1
    assert "echo_script" not in {m["kind"] for m in stranger_client.get("/api/modules").json()["modules"]}
    doc = pipeline([node("a", "echo_script")], [])
    problems = stranger_client.post("/api/validate", json.dumps(doc), content_type="application/json").json()["problems"]
    assert [p["code"] for p in problems] == ["unknown_kind"]
    assert owner_client.post("/api/validate", json.dumps(doc), content_type="application/json").json()["problems"] == []


def test_a_saved_pipeline_keeps_its_component_version_when_a_new_one_is_added(users, owner_client):
    upload(users["owner"], text="one")
    created = owner_client.post("/api/pipelines", json.dumps({"name": "p", "draft": pipeline([node("a", "echo_script")], [])}),
                                content_type="application/json").json()
    stored = Pipeline.objects.get(pk=created["id"])
    assert stored.draft["nodes"][0]["version"] == 1  # pinned at save
    upload(users["owner"], text="two", version=2)
    assert get_catalogue(users["owner"]).versions("echo_script") == [1, 2]
    assert drafts.problems(stored.draft, users["owner"].id) == []
    run = runs.submit(users["owner"], stored.draft, pipeline=stored, inline=True)
    nr = NodeRun.objects.get(run=run, node_id="a")
    assert nr.status == st.COMPLETED, nr.error
    assert (out_path(nr.outputs["out"]) / "value.txt").read_text() == "one"  # version 1 ran
    # a node added now gets the latest version, and the run's snapshot names the one that ran
    run2 = runs.submit(users["owner"], pipeline([node("b", "echo_script")], []), inline=True)
    assert run2.snapshot["nodes"][0]["version"] == 2
    assert (out_path(NodeRun.objects.get(run=run2, node_id="b").outputs["out"]) / "value.txt").read_text() == "two"


def test_a_pinned_version_that_is_gone_is_named(users):
    upload(users["owner"], text="two", version=2)
    doc = pipeline([{**node("a", "echo_script"), "version": 1}], [])
    [problem] = graph.validate(doc, get_catalogue(users["owner"]))
    assert "'echo_script' version 1 is not available (versions: 2)" in problem.message


def test_the_timeout_run_setting_is_checked(users):
    upload(users["owner"])
    catalogue = get_catalogue(users["owner"])
    ok = pipeline([{**node("a", "echo_script"), "run_settings": {"timeout_seconds": 30}}], [])
    assert graph.validate(ok, catalogue) == []
    bad = pipeline([{**node("a", "echo_script"), "run_settings": {"timeout_seconds": -1}},
                    {**node("s", "toy_source"), "run_settings": {"timeout_seconds": 5}}], [])
    messages = sorted(p.message for p in graph.validate(bad, catalogue))
    assert messages == ["Echo script: Timeout (seconds) is -1: must be between 0 (no limit) and 2592000 (30 days)",
                        "Toy source has no Timeout run setting: Timeout (seconds) must be 0"]


def test_an_unchanged_component_is_reused_and_runs_again_once_its_code_changes(users, tmp_path):
    site = tmp_path / "components"
    write_component(site / "echo", text="first")
    settings_dirs = (site,)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(settings, "COMPONENT_DIRS", settings_dirs)
        doc = pipeline([node("a", "echo_script")], [])
        first = runs.submit(users["owner"], doc, inline=True)
        second = runs.submit(users["owner"], doc, inline=True)
        assert NodeRun.objects.get(run=second, node_id="a").status == st.REUSED
        (site / "echo" / "echo.py").write_text(SCRIPT.format(text="edited, a longer text"))
        third = runs.submit(users["owner"], doc, inline=True)
        nr = NodeRun.objects.get(run=third, node_id="a")
        assert nr.status == st.COMPLETED
        assert (out_path(nr.outputs["out"]) / "value.txt").read_text() == "edited, a longer text"
        assert NodeRun.objects.get(run=first, node_id="a").status == st.COMPLETED
    module_catalogue.load.cache_clear()


def test_a_bad_component_file_stops_start_up_naming_the_file_and_field(tmp_path):
    write_component(tmp_path / "broken")
    (tmp_path / "broken" / "component.yaml").write_text(component_yaml().replace("type: AnyDirectory", "type: Spreadsheet"))
    env = {"DESIGNER_COMPONENT_DIRS": str(tmp_path), "DESIGNER_DATA_DIR": str(tmp_path / "data"),
           "PATH": "/usr/bin:/bin", "SECRET_KEY": settings.SECRET_KEY}
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "component.yaml" in done.stderr and "outputs.out.type" in done.stderr and "Spreadsheet" in done.stderr


def test_an_edited_component_file_is_read_again_and_a_broken_edit_keeps_the_one_before(tmp_path, monkeypatch, caplog):
    from designer.pipelines.catalogue import service as catalogue

    site = tmp_path / "components"
    file = write_component(site / "echo", label="Echo script")
    monkeypatch.setattr(settings, "COMPONENT_DIRS", (site,))
    monkeypatch.setattr(catalogue, "STAMP_SECONDS", 0)  # looked at on every call
    assert get_catalogue().get("echo_script").label == "Echo script"
    file.write_text(component_yaml(label="Echo script, renamed"))
    assert get_catalogue().get("echo_script").label == "Echo script, renamed"
    file.write_text(component_yaml(label="Broken").replace("type: AnyDirectory", "type: Spreadsheet"))
    assert get_catalogue().get("echo_script").label == "Echo script, renamed"  # the page goes on working
    assert "cannot be loaded" in caplog.text and "Spreadsheet" in caplog.text


def test_a_users_components_run_only_while_they_hold_the_permission(users):
    from django.contrib.auth import get_user_model

    owner = users["owner"]
    upload(owner, text="mine")
    doc = pipeline([node("a", "echo_script")], [])
    run = runs.submit(owner, doc, inline=True)
    assert NodeRun.objects.get(run=run, node_id="a").status == st.COMPLETED
    owner.user_permissions.clear()  # withdrawn in the admin
    fresh = get_user_model().objects.get(pk=owner.pk)  # (a user object keeps the permissions it read)
    assert "echo_script" not in get_catalogue(fresh) and "echo_script" not in get_catalogue(owner.pk)
    with pytest.raises(graph.PipelineInvalid, match="'echo_script' is a component you uploaded, and you may no longer run "
                                                     "components: an administrator withdrew the permission"):
        runs.submit(fresh, doc, inline=True)
    # another user's pipeline with that kind: simply unknown to them
    with pytest.raises(graph.PipelineInvalid, match="unknown module kind 'echo_script'"):
        runs.submit(users["stranger"], doc, inline=True)
    fresh.is_active = False  # a deactivated user's code runs no more either, whatever they held
    assert "echo_script" not in get_catalogue(fresh)
