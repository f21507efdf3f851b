"""Issue 15: a running node shows its progress, live: "running · epoch 2/3 · 14 s" with its last
loss and accuracy on a line under it, the time going on every second; once it ends, its status and
duration ("completed · 21.3 s"), the last figures on hover. A real run of Train PyTorch Model on a
real worker: digits at 32 x 32, 30 per class, three epochs."""
import datetime as dt
import io
import json
import re

import pytest
from django.core.management import call_command

from tests.conftest import ROOT
from tests.e2e.helpers import node, open_designer
from tests.imagesets import digits_folder
from tests.machine import patience
from tests.pipes import link, pipeline
from tests.pipes import node as n

pytestmark = pytest.mark.browser

EPOCHS = 5  # four epochs of room to see it running, on a busy machine too
KEEP = {"dataset", "convert", "split", "transform", "apply_train", "apply_val", "resnet", "train"}


def small_digits(tmp_path, owner) -> dict:
    """examples/digits.json up to Train PyTorch Model, on a small dataset, three quick epochs."""
    folder = digits_folder(tmp_path / "digits", per_class=30, size=32)
    out = io.StringIO()
    call_command("add_dataset", str(folder), owner=owner.username, name="digits", stdout=out)
    doc = json.loads((ROOT / "examples" / "digits.json").read_text())
    doc["nodes"] = [n for n in doc["nodes"] if n["id"] in KEEP]
    doc["links"] = [l for l in doc["links"] if l["from"]["node"] in KEEP and l["to"]["node"] in KEEP]
    doc.pop("layout")
    params = {n["id"]: n["parameters"] for n in doc["nodes"]}
    params["dataset"]["dataset"] = int(out.getvalue())
    params["train"].update(epochs=EPOCHS, batch_size=16, warmup_step_number=0, print_frequency=0)
    return doc


def status_line(page, nid):
    return " ".join(node(page, nid).locator(".node-status tspan").all_text_contents()).replace("\xa0", " ")


def seconds(text):
    """The time in a status line: '1 min 12 s' -> 72."""
    m = re.search(r"(?:(\d+) min )?(\d+) s$", text)
    return int(m.group(1) or 0) * 60 + int(m.group(2))


STATUS_JS = """nid => [...document.querySelectorAll(`#canvas g[data-cell-id="${nid}"] .node-status tspan`)]
    .map(t => t.textContent).join(' ').replaceAll('\\u00a0', ' ')"""


def test_a_training_node_shows_its_epoch_time_and_figures_live_then_its_duration(page, users, shared_worker, tmp_path):
    open_designer(page, users["owner"], small_digits(tmp_path, users["owner"]))
    page.evaluate("designer.graph.zoomTo(1); designer.graph.centerCell(designer.graph.getCellById('train'))")
    page.click("#submit")
    # an epoch done, the node still running: its epoch of three, its time so far
    page.wait_for_function(f"({STATUS_JS})('train').match(/^running · epoch \\d+\\/{EPOCHS} done · \\d+ s$/)", timeout=patience(120_000))
    first = status_line(page, "train")
    progress = node(page, "train").locator(".node-progress")
    assert re.fullmatch(r"loss \d+(\.\d+)? · acc 0\.\d{3}", " ".join(progress.locator("tspan").all_text_contents()).replace("\xa0", " "))
    body = node(page, "train").locator("rect").first.bounding_box()
    out_name = node(page, "train").locator("text.x6-port-label").last
    for line in (node(page, "train").locator(".node-status"), progress):
        box = line.bounding_box()
        assert box["x"] + box["width"] <= body["x"] + body["width"] and box["y"] + box["height"] <= out_name.bounding_box()["y"]
    page.shot("training-running")
    # the time goes on by itself, a second at a time, while the node runs
    page.wait_for_function(f"""() => {{ const t = ({STATUS_JS})('train'); const m = t.match(/(\\d+) s$/);
        return t.startsWith('running') && m && Number(m[1]) > {seconds(first)}; }}""", timeout=10_000)
    page.shot("training-later")
    # done: its duration, the progress line gone (the node as tall as before), the last figures on hover
    page.wait_for_function(f"({STATUS_JS})('train').startsWith('completed')", timeout=patience(120_000))
    assert re.fullmatch(r"completed · \d+(\.\d)? s|completed · \d+ min \d+ s", status_line(page, "train")), status_line(page, "train")
    assert progress.locator("tspan").all_text_contents() in ([], [""], ["-"]) or not progress.is_visible()
    title = node(page, "train").locator(".node-status-tip > title").text_content()
    assert f"epoch {EPOCHS} of {EPOCHS}" in title and "training_loss" in title and "validation_top1_accuracy" in title, title
    assert node(page, "train").locator("rect").first.bounding_box()["height"] < body["height"]
    # on every node, the status line clear of the label and of the port names, inside the node
    for nid in KEEP:
        status = node(page, nid).locator(".node-status").bounding_box()
        others = [node(page, nid).locator(".node-label").bounding_box()]
        others += [t.bounding_box() for t in node(page, nid).locator("text.x6-port-label").all()]
        assert all(apart(status, o) for o in others), (nid, status, others)
        assert inside(status, node(page, nid).locator("rect").first.bounding_box()), nid
    page.shot("training-completed")


def apart(a, b):
    return a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"] or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"]


def inside(a, b):
    return b["x"] <= a["x"] and a["x"] + a["width"] <= b["x"] + b["width"] and b["y"] <= a["y"] and a["y"] + a["height"] <= b["y"] + b["height"]


@pytest.mark.parametrize("hours", [3, -3])
def test_a_running_nodes_time_is_right_when_the_browsers_clock_is_wrong(page, users, shared_worker, hours):
    """A laptop whose clock is 3 h ahead of (or behind) the server still shows a running node's
    time so far as seconds: it is counted on the server's clock, not as '3 h 0 min' or a stuck '0 s'."""
    page.clock.install(time=dt.datetime.now(dt.UTC) + dt.timedelta(hours=hours))
    open_designer(page, users["owner"], pipeline([n("src", "toy_source", value=1), n("add", "toy_add", amount=1, sleep=15.0)], [link("src", "add")]))
    assert abs(page.evaluate("Date.now()") / 1000 - dt.datetime.now().timestamp() - hours * 3600) < 60  # the clock is off
    page.click("#submit")
    # seconds since it started (a wrong clock showed '3 h 0 min', or '0 s' that never moved)
    page.wait_for_function(f"(m => m && Number(m[1]) >= 1 && Number(m[1]) < 15)(({STATUS_JS})('add').match(/^running · (\\d+) s$/))", timeout=patience(60_000))
    first = seconds(status_line(page, "add"))
    page.shot(f"clock-off-{hours}h")
    page.wait_for_function(f"""() => {{ const m = ({STATUS_JS})('add').match(/^running · (\\d+) s$/); return m && Number(m[1]) > {first}; }}""", timeout=10_000)
