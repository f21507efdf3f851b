"""A node pinned to an earlier version of a component is drawn with that version's ports."""
import textwrap

import pytest
from django.conf import settings

from designer.engine import paths
from designer.pipelines.models import Component
from tests.conftest import may_add_components
from tests.e2e.helpers import open_designer
from tests.pipes import pipeline

pytestmark = pytest.mark.browser


def add_version(owner, version, output, label):
    may_add_components(owner)
    row = Component.objects.create(owner=owner, kind="echo_script", version=version, label="Echo script",
                                   folder="-", file="component.yaml", digest=f"v{version}")
    folder = paths.component_dir(settings.ARTIFACT_ROOT, owner.id, row.id)
    folder.mkdir(parents=True)
    (folder / "echo.py").write_text("print('hi')\n")
    (folder / "component.yaml").write_text(textwrap.dedent(f"""\
        kind: echo_script
        label: Echo script
        category: Test components
        version: {version}
        command: python echo.py {{outputs.{output}}}
        outputs:
          {output}: {{type: AnyDirectory, label: {label}}}
        """))
    row.folder = str(folder.relative_to(settings.ARTIFACT_ROOT))
    row.save()


def port_label(page, nid, port_id):
    text = page.locator(f'#canvas g[data-cell-id="{nid}"] g.x6-port:has([port="{port_id}"]) text.x6-port-label')
    return text.locator("tspan")


def test_a_node_pinned_to_version_1_shows_version_1s_ports_beside_a_new_node_of_version_2(page, users):
    owner = users["owner"]
    add_version(owner, 1, "out", "Old out")
    add_version(owner, 2, "result", "New result")
    doc = pipeline([{"id": "old", "kind": "echo_script", "version": 1, "parameters": {}},
                    {"id": "new", "kind": "echo_script", "parameters": {}}], [])
    open_designer(page, owner, doc)
    assert port_label(page, "old", "out:out").all_text_contents() == ["Old\xa0out"]
    assert port_label(page, "new", "out:result").all_text_contents() == ["New\xa0result"]  # kept on one line (no-break space)
    assert port_label(page, "old", "out:result").count() == 0
    assert page.inner_text("#problems") == "No problems: ready to submit."
    page.shot("pinned-versions")
