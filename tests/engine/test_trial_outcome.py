"""A trial its policy asked to stop: early terminated, or completed when it ran its course anyway,
and the line that says which (issue 29: scripts logging through azureml or MLflow plan no steps)."""
from designer.engine import statuses as st
from designer.engine.trial_outcome import label

CURVE = [(1, 0.1), (2, 0.2), (3, 0.3)]


def test_a_script_ended_after_its_grace_is_early_terminated_and_says_whether_it_ever_asked():
    assert label(2, CURVE, None, {"how": "ended", "grace": 60, "after": 60.2, "seen": False}) == (
        st.EARLY_TERMINATED, "early terminated at epoch 3: ended 60 s after it was asked to stop at epoch 2 "
                             "(it never checks stop_requested())")
    status, detail = label(2, CURVE, 10, {"how": "ended", "grace": 2.5, "after": 2.6, "seen": True})
    assert status == st.EARLY_TERMINATED and "ended 2.5 s after" in detail and "did not stop in time" in detail


def test_a_script_that_stopped_when_asked_is_early_terminated_unless_it_had_run_every_planned_step():
    cooperative = {"how": "cooperative", "grace": 60, "after": 1.0, "seen": True}
    assert label(2, CURVE, None, cooperative) == (st.EARLY_TERMINATED, "early terminated at epoch 3: the script stopped when asked at epoch 2")
    assert label(2, CURVE, 10, cooperative)[0] == st.EARLY_TERMINATED
    assert label(3, CURVE, 3, cooperative) == (st.COMPLETED, "asked to stop at epoch 3, it had run every epoch it planned")


def test_a_script_asked_that_finished_without_reading_the_request_is_completed_even_without_a_plan():
    assert label(2, CURVE, None, {"how": "finished", "grace": 60, "after": 0.4, "seen": False}) == (
        st.COMPLETED, "asked to stop at epoch 2, it ran its course and finished on its own (it never read stop_requested())")


def test_a_module_that_sends_no_event_is_judged_by_its_plan_as_before():
    assert label(2, CURVE, 10, None) == (st.EARLY_TERMINATED, "")
    assert label(3, CURVE, 3, None) == (st.COMPLETED, "")
    assert label(2, CURVE, None, None) == (st.EARLY_TERMINATED, "")
