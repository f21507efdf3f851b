"""Compute targets in the pipeline file (designer/engine/targets.py): which target each node runs
on, validation of targets that do not exist or are too small, and the schema_version 2 -> 3
migration that introduced them. Plain Python: no database."""
import copy

from designer.engine import graph, scheduler
from designer.engine.schema_migrations import CURRENT, migrate
from designer.engine.targets import Member, Target, target_of
from modules import catalogue as module_catalogue
from tests import toy_modules as toys
from tests.pipes import link, node, pipeline

CAT = module_catalogue.Catalogue([toys.ToySource, toys.ToyAdd, toys.ToyTraining, toys.ToyDistributed])
TARGETS = {"cpu": Target("cpu", (Member("c1@a", 4, "CPU core(s)"), Member("c2@a", 2, "CPU core(s)"))),
           "gpu": Target("gpu", (Member("g1@b", 2, "GPU(s)"),)),
           "tpu": Target("tpu")}  # joined once, no worker alive now


def doc(default=None, train_target=None, **train_rs):
    d = pipeline([node("src", "toy_source", value=1), node("conv", "toy_add"), node("fit", "toy_training")],
                 [link("src", "conv")])  # (Toy training has no input)
    if default is not None:
        d["compute_target"] = default
    rs = {**train_rs, **({"compute_target": train_target} if train_target is not None else {})}
    if rs:
        d["nodes"][2]["run_settings"] = rs
    return d


def texts(d, targets=TARGETS):
    return [str(p) for p in graph.validate(d, CAT, compute=targets)]


def test_a_node_runs_on_its_own_target_else_the_pipelines_default_else_any_worker():
    d = doc("cpu", "gpu")
    assert [target_of(d, n) for n in d["nodes"]] == ["cpu", "cpu", "gpu"]
    assert [target_of(doc(), n) for n in doc()["nodes"]] == ["", "", ""]
    assert [target_of(doc(None, "gpu"), n) for n in doc()["nodes"]] == ["", "", ""]
    assert scheduler.RunGraph.of(d).compute == {"src": "cpu", "conv": "cpu", "fit": "gpu"}
    assert scheduler.RunGraph.of(doc("", "")).compute == {}  # empty: none named


def test_known_targets_have_no_problem_and_without_what_the_workers_report_none_is_checked():
    assert texts(doc("cpu", "gpu")) == [] and texts(doc("tpu")) == []  # tpu: its nodes wait for a worker
    assert texts(doc("nope", "nada"), targets=None) == []


def test_a_target_that_does_not_exist_is_named_with_the_ones_that_do():
    assert texts(doc("cpux")) == ["the pipeline's default compute target 'cpux' does not exist: the compute targets are "
                                  "cpu (2 live workers), gpu (1 live worker), tpu (no live workers)"]
    [problem] = graph.validate(doc("cpu", "gpux"), CAT, compute=TARGETS)
    assert (problem.node, problem.param, problem.code) == ("fit", "compute_target", "unknown_target")
    assert str(problem).startswith("Toy training, parameter 'compute_target': Compute target 'gpux' does not exist: "
                                   "the compute targets are cpu")
    assert texts(doc("gpu"), targets={}) == ["the pipeline's default compute target 'gpu' does not exist: no worker "
                                             "has joined a compute target yet (a worker joins one with WORKER_COMPUTE_TARGET)"]


def test_node_count_times_process_count_is_checked_against_the_targets_live_workers():
    def dist(target, n, p):
        return pipeline([dict(node("d", "toy_distributed"), run_settings={"node_count": n, "process_count_per_node": p,
                                                                          "compute_target": target})], [])

    assert texts(dist("cpu", 2, 2)) == [] and texts(dist("gpu", 1, 2)) == [] and texts(dist("cpu", 1, 4)) == []
    assert texts(dist("gpu", 1, 4)) == [
        "Toy distributed, parameter 'process_count_per_node': Node count x Process count per node is 1 x 4, but compute "
        "target 'gpu' has 0 live worker(s) with 4 units or more (its GPUs, else its CPU cores; one worker is one node): "
        "g1@b (2 GPU(s))"]
    [too_many] = graph.validate(dist("cpu", 2, 3), CAT, compute=TARGETS)
    assert too_many.param == "node_count" and "has 1 live worker(s) with 3 units or more" in too_many.message
    assert texts(dist("tpu", 8, 8)) == []  # no live worker: it waits (and says so) rather than being refused


def test_the_schema_takes_a_target_name_or_nothing_and_refuses_another_shape():
    assert graph.validate(doc("", ""), CAT) == []
    bad = doc("../etc", 7)
    assert sorted(p.code for p in graph.validate(bad, CAT)) == ["schema", "schema"]


def test_a_version_2_file_migrates_to_version_3_unchanged_but_its_version():
    v2 = {**doc(), "schema_version": 2}
    before = copy.deepcopy(v2)
    v3 = migrate(v2)
    assert CURRENT == 3 and v3 == {**before, "schema_version": 3} and v2 == before
    assert graph.schema_problems({**doc("cpu"), "schema_version": 2}) != [], "a version 2 file names no target"
    assert texts(v3) == []
