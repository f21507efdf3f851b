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


def _random_dag(rng, n):
    from tests.pipes import link, node, pipeline

    nodes = [node(f"n{i}", "toy_add") for i in range(n)]
    links = [link(f"n{j}", f"n{i}", lid=f"l{j}-{i}") for i in range(n) for j in range(i) if rng.random() < 0.15]
    return pipeline(nodes, links)


def test_looking_only_around_each_change_decides_what_looking_at_everything_decides():
    """Runs simulated to the end on random DAGs: after every node that ends (succeeds, fails or
    is cancelled), next_steps() over its neighbourhood gives the same decisions as plan()."""
    import random

    rng = random.Random(7)
    for _ in range(40):
        doc = _random_dag(rng, rng.randint(1, 25))
        g = s.RunGraph.of(doc)
        full = {n["id"]: s.PENDING for n in doc["nodes"]}
        first = s.plan(doc, full)
        assert sorted(s.next_steps(g, full, list(g.nodes)).ready) == sorted(first.ready)
        running = set(first.ready)
        full.update(dict.fromkeys(running, s.QUEUED))
        while running:
            done = rng.choice(sorted(running))
            running.discard(done)
            full[done] = rng.choice([s.COMPLETED, s.COMPLETED, s.REUSED, s.FAILED, s.CANCELLED])
            expected = s.plan(doc, full)
            needed = g.affected_by([done], full)
            step = s.next_steps(g, {k: full[k] for k in needed}, g.children[done])
            assert sorted(step.ready) == sorted(r for r in expected.ready if r not in running)
            assert sorted(step.not_run) == sorted(expected.not_run)
            for r in step.ready:
                full[r] = s.QUEUED
                running.add(r)
            for x in step.not_run:
                full[x] = s.NOT_RUN
        assert all(v in s.TERMINAL for v in full.values()), "every node ends: nothing is left pending"
        assert s.outcome(full.values()) == s.plan(doc, full).outcome
