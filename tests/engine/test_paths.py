"""Every artifact path comes from designer/engine/paths.py and stays inside its folder."""
import json
import os
from pathlib import Path

import pytest

from designer.engine import executor, graph, logstore, paths
from modules import catalogue as module_catalogue
from sdk.declarations import ImageDirectory, Module, Port
from tests import toy_modules as toys
from tests.pipes import chain, link, node, pipeline, two_branches

CAT = module_catalogue.Catalogue([toys.ToySource, toys.ToyAdd, toys.ToySink])
ROOT = Path(__file__).resolve().parent.parent.parent
ESCAPES = ["..", ".", "../x", "a/../..", "a/../../b", "/etc/passwd", "", "a\0b", "../" * 8 + "etc"]


@pytest.mark.parametrize("name", ESCAPES)
def test_inside_refuses_every_name_that_leaves_its_folder_or_names_the_folder_itself(tmp_path, name):
    root = tmp_path / "run"
    root.mkdir()
    with pytest.raises(paths.OutsideFolder) as e:
        paths.inside(root, name)
    assert repr(name) in str(e.value) or "usable" in str(e.value)


def test_inside_keeps_names_below_the_folder_and_resolves_them(tmp_path):
    assert paths.inside(tmp_path, "a", "b.txt") == tmp_path.resolve() / "a" / "b.txt"
    assert paths.inside(tmp_path, "a/./b/../c") == tmp_path.resolve() / "a" / "c"
    assert paths.inside(tmp_path, "...") == tmp_path.resolve() / "..."  # a name, not a parent
    assert paths.inside(tmp_path, str(tmp_path / "x")) == tmp_path.resolve() / "x"  # absolute, but inside
    assert paths.inside(tmp_path) == tmp_path.resolve()


def test_inside_follows_symbolic_links_before_judging(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("theirs")
    root = tmp_path / "run"
    root.mkdir()
    os.symlink(outside, root / "link")
    with pytest.raises(paths.OutsideFolder):
        paths.inside(root, "link", "secret.txt")
    os.symlink(root / "loop", root / "loop")
    with pytest.raises(paths.OutsideFolder):
        paths.inside(root, "loop", "x")


@pytest.mark.parametrize("node_id", ["..", ".", "a/b", "a\\b", "", "a\0", "x" * 65, "é", 7, None])
def test_a_node_folder_is_refused_for_an_id_that_cannot_name_one(tmp_path, node_id):
    with pytest.raises(paths.OutsideFolder, match="node id"):
        paths.node_dir(tmp_path, 3, node_id)
    assert list(tmp_path.iterdir()) == []


def test_a_node_folder_is_inside_its_run_folder(tmp_path):
    assert paths.node_dir(tmp_path, 3, "n0") == tmp_path.resolve() / "3" / "n0"
    assert paths.node_dir(tmp_path, 3, "...") == tmp_path.resolve() / "3" / "..."
    for bad_run in ("..", "3/..", True, 2.0):
        with pytest.raises(paths.OutsideFolder):
            paths.run_dir(tmp_path, bad_run)


def test_a_log_name_stays_in_the_logs_folder(tmp_path):
    logs = paths.logs_dir(paths.node_dir(tmp_path, 1, "a"))
    other = paths.log_file(paths.logs_dir(paths.node_dir(tmp_path, 2, "b")))
    other.parent.mkdir(parents=True)
    other.write_text("someone else's log\n")
    assert logstore.read(logs, paths.LOG_FILE).text == ""
    for name in ("../../../2/b/logs/70_driver_log.txt", str(other), "..", ""):
        with pytest.raises(paths.OutsideFolder):
            logstore.read(logs, name)


@pytest.mark.parametrize("uploaded,stored", [
    ("../../x.zip", "x.zip"), ("..\\..\\x.zip", "x.zip"), ("/etc/passwd", "passwd"), ("C:\\data\\pets.tar.gz", "pets.tar.gz"),
    ("..", "upload"), (".", "upload"), ("", "upload"), ("a\0b\n.zip", "ab.zip"), ("pets.zip", "pets.zip"),
])
def test_an_uploaded_file_name_keeps_only_a_safe_last_component(uploaded, stored):
    assert paths.safe_filename(uploaded) == stored
    assert paths.dataset_name(4, "f00d", uploaded) == f"datasets/4/f00d/{stored}"


def test_a_very_long_file_name_is_shortened_keeping_its_archive_suffix():
    name = paths.safe_filename("é" * 400 + ".tar.gz")
    assert name.endswith(".tar.gz") and len(name) == paths.MAX_FILENAME_CHARS and len(name.encode()) < 255 + 100


def test_a_stored_dataset_file_must_be_in_its_owners_folder(tmp_path):
    assert paths.dataset_file(tmp_path, 4, "datasets/4/f00d/x.zip") == tmp_path.resolve() / "datasets/4/f00d/x.zip"
    for stored in ("datasets/5/f00d/x.zip", "datasets/4/../5/f00d/x.zip", "/etc/passwd", "datasets/4", "../x.zip"):
        with pytest.raises(paths.OutsideFolder):
            paths.dataset_file(tmp_path, 4, stored)
    with pytest.raises(paths.OutsideFolder):
        paths.dataset_name(4, "..", "x.zip")


# ---------------------------------------------------------------- the file format


def test_the_schema_and_paths_py_spell_the_same_id_rule():
    schema = json.loads(graph.SCHEMA_PATH.read_text())
    assert schema["$defs"]["id"]["pattern"] == paths.ID_PATTERN


def every_example_and_test_document():
    docs = [chain(3), two_branches()]
    for f in sorted((ROOT / "examples").glob("*.json")):
        docs.append(graph.upgrade(json.loads(f.read_text())))
    return docs


def test_every_id_of_the_examples_and_tests_is_still_accepted():
    docs = every_example_and_test_document()
    assert len(docs) >= 3
    for doc in docs:
        ids = [n["id"] for n in doc["nodes"]] + [lk["id"] for lk in doc["links"]]
        assert all(paths.is_safe_id(i) for i in ids), ids
        assert graph.schema_problems(doc) == [], doc.get("name")
    for page_id in ("n1", "n12", "0c3f5a9e-2b1d-4e6f-9a7b-1c2d3e4f5a6b", "train_1", "a.b"):  # the page's ids
        assert paths.is_safe_id(page_id)


@pytest.mark.parametrize("bad", ["..", ".", "a/b", "../n1", "a\0b", ""])
def test_a_node_id_that_names_no_folder_is_a_problem_naming_the_node(bad):
    doc = pipeline([node(bad, "toy_source"), node("b", "toy_add")], [link(bad, "b", lid="l1")])
    problems = graph.validate(doc, CAT)
    mine = [p for p in problems if p.code == "bad_id"]
    assert len(mine) == 1 and mine[0].node == bad, problems
    assert f"node {bad!r}: nodes/0/id: {bad!r} cannot be an id: an id is 1 to 64 letters" in str(mine[0])
    with pytest.raises(graph.PipelineInvalid):
        graph.check(doc, CAT)


def test_a_link_id_of_dot_dot_is_a_problem_naming_the_link():
    doc = pipeline([node("a", "toy_source"), node("b", "toy_add")], [link("a", "b", lid="..")])
    [problem] = graph.validate(doc, CAT)
    assert problem.code == "bad_id" and problem.link == ".." and "cannot be an id" in str(problem)


# ---------------------------------------------------------------- the executor


class EscapingPort(Module):
    """A module whose output port name would leave the node's folder (a careless declaration)."""

    kind = "toy_escaping_port"
    label = "Escaping port"
    category = "Tests"
    outputs = [Port("..", ImageDirectory)]

    def run(self, ctx):
        (ctx.output_dir("..") / "value.txt").write_text("1")


def test_the_executor_writes_outputs_and_logs_only_in_the_node_folder(tmp_path):
    node_folder = paths.node_dir(tmp_path, 1, "src")
    outputs = executor.execute(toys.ToySource, node("src", "toy_source", value=4), {}, node_folder, lambda e: None)
    assert outputs == {"out": str(node_folder / "out")}
    assert sorted(str(p.relative_to(tmp_path.resolve())) for p in tmp_path.rglob("*") if p.is_file()) == \
        ["1/src/logs/70_driver_log.txt", "1/src/out/_meta.yaml", "1/src/out/value.txt"]


def test_an_output_port_that_leaves_the_node_folder_writes_nothing_outside_it(tmp_path):
    node_folder = paths.node_dir(tmp_path, 1, "a")
    with pytest.raises(paths.OutsideFolder):
        executor.execute(EscapingPort, {"id": "a", "kind": EscapingPort.kind}, {}, node_folder, lambda e: None)
    assert list(tmp_path.rglob("value.txt")) == []
    assert executor.error_text(paths.OutsideFolder("'..' leads outside")).startswith("OutsideFolder: '..' leads outside")
