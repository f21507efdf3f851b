"""A sweep's early-termination policy, where the trial runs: in the worker that runs its node.

Every step of the primary metric that a node of a trial emits goes to the Optuna study
(tuning.report); when the policy says the trial loses, the node is asked to wrap up
(Context.stop_requested): the training stops after that epoch and keeps its best one, and the
trial ends "early terminated". Nothing is asked at a module's last step (it saves nothing). A
component's command that is still running `policy.stop_grace_seconds` after the request is ended
(supervision/stopping.py); its `stopped` event says how it ended, which the trial's label repeats
(sweeps.trial_finished), and a node ended so keeps outputs that may be partial: never reused.
"""
from __future__ import annotations

from collections.abc import Callable

from designer.engine import sweep_config, tuning
from designer.engine.executor import Event
from designer.pipelines.models import NodeRun, Trial
from designer.pipelines.sweeps import studies
from sdk.context import ENDED, STOP_GRACE_SECONDS


class Watch:
    """`emit` wrapped for one node: `watch.emit` passes every event on and reports the primary
    metric; `watch.stop()` says whether the policy ended the trial, `watch.grace` how long a command
    then has, `watch.ended` whether its processes had to be ended."""

    def __init__(self, nr: NodeRun, emit: Callable[[Event], None], log: Callable[[str], None]):
        self.nr, self._emit, self._log = nr, emit, log
        self.trial = Trial.objects.filter(run_id=nr.run_id).select_related("sweep").first()
        self.stopped = bool(self.trial and self.trial.stop_requested)
        self.config = sweep_config.SweepConfig.from_dict(self.trial.sweep.config) if self.trial else None
        self.study = None
        self.grace = self.config.policy.grace if self.config else STOP_GRACE_SECONDS
        self.ended = False

    def stop(self) -> bool:
        return self.stopped

    def emit(self, event: Event) -> None:
        self._emit(event)
        if event.type == "stopped":
            self.ended = self.ended or event.data.get("how") == ENDED
        if self.trial is None or event.type != "metric" or event.data.get("name") != self.config.primary_metric_name:
            return
        step = event.data.get("step")
        if step is None:
            return
        try:
            self._report(int(step), float(event.data["value"]), event.data.get("steps"))
        except Exception as e:  # the study's database is away: the trial runs on, unjudged this step
            self._log(f"the sweep's policy could not judge step {step}: {e}")

    def _report(self, step: int, value: float, steps: int | None) -> None:
        if self.study is None:
            self.study = studies.load(self.trial.sweep, self.config)
        verdict = tuning.report(self.study, self.config, self.trial.optuna_trial_id, step, value)
        if not verdict or self.stopped or (steps is not None and step >= steps):
            return
        self.stopped = True
        Trial.objects.filter(pk=self.trial.pk).update(stop_requested=True, stopped_at_step=step)
        policy = self.config.policy.type
        self._log(
            f"{policy}: this trial's {self.config.primary_metric_name} {value:.4g} at step {step} loses against the "
            f"other trials: it stops after this step and keeps its best so far (early terminated); a command still "
            f"running {self.grace:g} s later is ended (stop_grace_seconds)")
