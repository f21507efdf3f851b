from designer.engine import scheduler as s
from tests.pipes import two_branches


def statuses(**kw):
    base = {"src": s.PENDING, "left": s.PENDING, "left2": s.PENDING, "right": s.PENDING}
    return base | kw


def test_only_nodes_with_finished_inputs_are_ready():
    assert s.plan(two_branches(), statuses()).ready == ["src"]
    assert sorted(s.plan(two_branches(), statuses(src=s.COMPLETED)).ready) == ["left", "right"]


def test_a_failed_node_stops_its_downstream_but_not_other_branches():
    p = s.plan(two_branches(), statuses(src=s.REUSED, left=s.FAILED))
    assert p.not_run == ["left2"] and p.ready == ["right"] and not p.finished


def test_the_run_fails_when_all_is_over_and_one_node_failed():
    p = s.plan(two_branches(), statuses(src=s.COMPLETED, left=s.FAILED, left2=s.NOT_RUN, right=s.COMPLETED))
    assert p.finished and p.outcome == s.FAILED


def test_a_cancelled_source_marks_everything_not_run():
    p = s.plan(two_branches(), statuses(src=s.CANCELLED))
    assert sorted(p.not_run) == ["left", "left2", "right"] and p.finished and p.outcome == s.CANCELLED
