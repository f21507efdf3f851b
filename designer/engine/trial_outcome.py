"""How a trial that its sweep's policy asked to stop ended, in the sweep's words: early terminated,
or completed when it had run its course anyway; and a line saying which happened.

What is reliable: the `stopped` event of a component's command (sdk.context.Stopped: ended after
its grace; stopped by itself having read stop_requested(); or finished without reading it), and
the planned number of steps when the script reports it (`steps`). Scripts logging through azureml
or MLflow report no planned steps, so a curve shorter than the plan cannot be the test for them.
A module that reads ctx.stop_requested() in-process (Train PyTorch Model, one process) sends no
event: its curve against its plan decides, as before.
"""
from __future__ import annotations

from designer.engine import statuses as st
from sdk.context import COOPERATIVE, ENDED, FINISHED


def label(asked_at: int | None, curve: list[tuple[int, float]], planned: int | None, stopped: dict | None) -> tuple[str, str]:
    """(status, detail) of a trial whose run completed after its policy asked it to stop at step
    `asked_at`; `curve`: its primary metric [(step, value)]; `planned`: the steps it meant to run,
    when it said; `stopped`: its command's `stopped` event data, None when none came."""
    reached = curve[-1][0] if curve else asked_at
    at = f" at epoch {asked_at}" if asked_at is not None else ""
    every = planned is not None and len(curve) >= planned
    how = (stopped or {}).get("how")
    if how == ENDED:
        grace = float(stopped.get("grace") or 0) if stopped else 0.0
        why = ("it read stop_requested() but did not stop in time: a longer policy.stop_grace_seconds?" if (stopped or {}).get("seen")
               else "it never checks stop_requested()")
        return st.EARLY_TERMINATED, f"early terminated at epoch {reached}: ended {grace:g} s after it was asked to stop{at} ({why})"
    if how == FINISHED:
        return st.COMPLETED, f"asked to stop{at}, it ran its course and finished on its own (it never read stop_requested())"
    if how == COOPERATIVE and every:
        return st.COMPLETED, f"asked to stop{at}, it had run every epoch it planned"
    if how == COOPERATIVE:
        return st.EARLY_TERMINATED, f"early terminated at epoch {reached}: the script stopped when asked{at}"
    if len(curve) < (planned or len(curve) + 1):  # no event: the module's own stop, judged by its plan
        return st.EARLY_TERMINATED, ""
    return st.COMPLETED, ""
