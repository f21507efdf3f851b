"""Rank 0's metrics file and `##metric` lines as the node's metric events while a distributed job
runs (issue 14); its other lines stay in its log file, read by the Log pane (logs stored once,
issue 28): however much a script prints, no event and no database row is made of it."""
import time

from designer.pipelines.runs.launchers.relay import Relay
from sdk.formats import metrics


class Recorder:
    """What the relay needs of the node's context (NodeContext.log and .metric), kept in lists."""

    def __init__(self):
        self.logs, self.metrics = [], []

    def log(self, text: str) -> None:
        self.logs.append(text)

    def metric(self, name, value, step=None, steps=None) -> None:
        self.metrics.append((name, value, step, steps))


def test_rank_0s_lines_stay_in_its_log_and_its_metric_lines_are_metrics_even_among_many(tmp_path):
    log, ctx = tmp_path / "70_driver_log_0.txt", Recorder()
    body = [f"line {i}" for i in range(500)] + ["##metric loss=0.5 accuracy=0.9 step=1 steps=2", "##metric loss=bad"]
    log.write_text("\n".join(body) + "\n")
    relay = Relay(ctx, None, log)
    relay.pump()
    assert ctx.metrics == [("loss", 0.5, 1, 2), ("accuracy", 0.9, 1, 2)]
    # the lines are not copied anywhere (the Log pane shows rank 0's file); a malformed metric line is explained
    assert ctx.logs == ["(designer) rank 0's line ignored: ##metric: the value of loss is not a number: 'bad'"]
    relay.pump()
    assert len(ctx.metrics) == 2 and len(ctx.logs) == 1  # nothing new


def test_the_metrics_file_is_relayed_line_by_line(tmp_path):
    ctx, path = Recorder(), tmp_path / "metrics.jsonl"
    relay = Relay(ctx, path, tmp_path / "70_driver_log_0.txt")
    relay.pump()  # neither file yet
    metrics.append(path, "training_loss", 0.5, 1, 3)
    relay.pump()
    metrics.append(path, "training_loss", 0.25, 2, 3)
    relay.pump()
    assert ctx.metrics == [("training_loss", 0.5, 1, 3), ("training_loss", 0.25, 2, 3)] and ctx.logs == []


def test_a_line_being_written_waits_for_its_end_or_the_final_pump(tmp_path):
    log, ctx = tmp_path / "70_driver_log_0.txt", Recorder()
    log.write_text("whole\n##metric loss=1 st")
    relay = Relay(ctx, None, log)
    relay.pump()
    assert ctx.metrics == []
    with log.open("a") as f:
        f.write("ep=4")
    relay.pump(final=True)
    assert ctx.metrics == [("loss", 1.0, 4, None)]


def test_a_million_line_log_is_read_quickly_and_makes_no_event_but_its_metric(tmp_path):
    log, ctx = tmp_path / "70_driver_log_0.txt", Recorder()
    with log.open("w") as f:
        for block in range(100):
            f.write("".join(f"step {block * 10_000 + i} of the script, loss going down\n" for i in range(10_000)))
            if block == 99:
                f.write("##metric loss=0.1 step=99\n")
    relay = Relay(ctx, None, log)
    started = time.monotonic()
    relay.pump()
    took = time.monotonic() - started
    assert ctx.logs == [] and ctx.metrics == [("loss", 0.1, 99, None)]
    assert took < 10, took  # about 0.1 s on an idle machine: 46 MB read a chunk at a time, not split


def test_a_figure_without_a_step_is_numbered_as_it_comes_per_name(tmp_path):
    """Issue 29: the original's run.log(name, value) has no step; a sweep needs a curve."""
    log, ctx, file = tmp_path / "70_driver_log_0.txt", Recorder(), tmp_path / metrics.METRICS_FILE
    log.write_text("##metric best_val_acc=0.5\n##metric loss=0.9 step=7\n")
    for value in (0.6, 0.7):
        metrics.append(file, "best_val_acc", value, None)
    Relay(ctx, file, log).pump(final=True)
    assert ctx.metrics == [("best_val_acc", 0.5, 1, None), ("loss", 0.9, 7, None), ("best_val_acc", 0.6, 2, None),
                           ("best_val_acc", 0.7, 3, None)]
