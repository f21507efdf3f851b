"""Rank 0's log and metrics file as the node's events while a distributed job runs (issue 14):
`##metric` lines are metrics, and however much a script prints, one pump makes one log event of
at most MAX_LINES_PER_PUMP lines (a million-line log is not a million database rows)."""
import time

from designer.pipelines.launchers.relay import MAX_LINES_PER_PUMP, Relay
from sdk.formats import metrics


class Recorder:
    """What the relay needs of the node's context (NodeContext.log and .metric), kept in lists."""

    def __init__(self):
        self.logs, self.metrics = [], []

    def log(self, text: str) -> None:
        self.logs.append(text)

    def metric(self, name, value, step=None, steps=None) -> None:
        self.metrics.append((name, value, step, steps))


def test_a_pump_makes_one_log_event_of_at_most_200_lines_and_names_the_file(tmp_path):
    log, ctx = tmp_path / "70_driver_log_0.txt", Recorder()
    log.write_text("".join(f"line {i}\n" for i in range(1000)))
    relay = Relay(ctx, None, log)
    relay.pump()
    assert len(ctx.logs) == 1
    lines = ctx.logs[0].splitlines()
    assert len(lines) == MAX_LINES_PER_PUMP + 1 == 201
    assert lines[0] == "rank 0: line 0" and lines[199] == "rank 0: line 199"
    assert lines[200] == "rank 0: ... 800 more lines: see 70_driver_log_0.txt"
    relay.pump()
    assert len(ctx.logs) == 1  # nothing new
    with log.open("a") as f:
        f.write("line 1000\n")
    relay.pump()
    assert ctx.logs[1] == "rank 0: line 1000"


def test_metric_lines_are_metrics_even_past_the_cap_and_a_malformed_one_is_text(tmp_path):
    log, ctx = tmp_path / "70_driver_log_0.txt", Recorder()
    body = [f"line {i}" for i in range(500)] + ["##metric loss=0.5 accuracy=0.9 step=1 steps=2", "##metric loss=bad"]
    log.write_text("\n".join(body) + "\n")
    Relay(ctx, None, log).pump()
    assert ctx.metrics == [("loss", 0.5, 1, 2), ("accuracy", 0.9, 1, 2)]
    assert ctx.logs[0].splitlines()[-2:] == ["rank 0: ... 302 more lines: see 70_driver_log_0.txt",
                                             "rank 0: (designer) line ignored: ##metric: the value of loss is not a number: 'bad'"]


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
    assert ctx.logs == ["rank 0: whole"] and ctx.metrics == []
    with log.open("a") as f:
        f.write("ep=4")
    relay.pump(final=True)
    assert ctx.logs[1] == "rank 0: ##metric loss=1 step=4" and ctx.metrics == [("loss", 1.0, 4, None)]


def test_a_million_line_log_makes_a_few_events_quickly(tmp_path):
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
    assert len(ctx.logs) == 1 and ctx.logs[0].endswith("... 999801 more lines: see 70_driver_log_0.txt")
    assert ctx.metrics == [("loss", 0.1, 99, None)]
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
