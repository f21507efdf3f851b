"""What a component's script calls (sdk.script) and the one parser of `##metric` lines (issue 14,
item 4): a no-op outside the designer and on every rank but 0; the stop request; the parser and
the follower of appended lines."""
import subprocess
import sys

import pytest

import sdk
from sdk import script
from sdk.formats import metrics
from sdk.formats.metrics import Follower, parse_line
from tests.conftest import ROOT


@pytest.fixture
def designer_env(tmp_path, monkeypatch):
    """The environment supervision.command gives a script."""
    monkeypatch.setenv("DESIGNER_METRICS_FILE", str(tmp_path / "metrics.jsonl"))
    monkeypatch.setenv("DESIGNER_STOP_FILE", str(tmp_path / "STOP"))
    monkeypatch.delenv("RANK", raising=False)
    return tmp_path


def test_log_metric_appends_a_line_of_the_metrics_file(designer_env):
    sdk.log_metric("training_loss", 0.5, step=1)
    sdk.log_metric("training_loss", 0.25, step=2, steps=10)
    sdk.log_metric("accuracy", 1)
    assert metrics.read(designer_env / "metrics.jsonl") == [
        {"name": "training_loss", "value": 0.5, "step": 1}, {"name": "training_loss", "value": 0.25, "step": 2, "steps": 10},
        {"name": "accuracy", "value": 1.0, "step": None}]


def test_log_metric_takes_numpy_like_numbers(designer_env):
    class Scalar:  # a tensor's or numpy's scalar: float() and int() work on it
        def __float__(self):
            return 0.75

    sdk.log_metric("accuracy", Scalar(), step=3.0)
    assert metrics.read(designer_env / "metrics.jsonl") == [{"name": "accuracy", "value": 0.75, "step": 3}]


def test_log_metric_outside_the_designer_does_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("DESIGNER_METRICS_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    sdk.log_metric("loss", 0.5, step=1)
    assert list(tmp_path.iterdir()) == []


def test_log_metric_on_rank_1_records_nothing(designer_env, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    sdk.log_metric("loss", 0.5, step=1)
    assert not (designer_env / "metrics.jsonl").exists()
    monkeypatch.setenv("RANK", "0")
    sdk.log_metric("loss", 0.5, step=1)
    assert len(metrics.read(designer_env / "metrics.jsonl")) == 1


@pytest.mark.parametrize(("args", "message"), [
    (("loss", "high"), "log_metric('loss'): the value must be a number, not 'high'"),
    (("loss", float("nan")), "log_metric('loss'): the value must be finite"),
    (("loss", 1.0, 1.5), "log_metric('loss'): step must be a whole number, not 1.5"),
    (("", 1.0), "log_metric: the name must be a non-empty string"),
])
def test_log_metric_refuses_what_is_not_a_figure(designer_env, args, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sdk.log_metric(*args)


def test_stop_requested_sees_the_stop_file(designer_env):
    assert sdk.stop_requested() is False
    (designer_env / "STOP").touch()
    assert sdk.stop_requested() is True


def test_stop_requested_outside_the_designer_is_false(monkeypatch):
    monkeypatch.delenv("DESIGNER_STOP_FILE", raising=False)
    assert script.stop_requested() is False


def test_a_script_imports_the_helper_without_anything_of_the_project_but_the_sdk():
    code = ("import sys; from sdk import log_metric, stop_requested; log_metric('x', 1); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('designer', 'modules', 'training', 'django', 'torch', 'numpy')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# ---------------------------------------------------------------- the ##metric lines


def test_parse_line_reads_every_figure_with_the_step():
    assert parse_line("##metric training_loss=0.42 validation_accuracy=0.91 step=3 steps=10") == [
        {"name": "training_loss", "value": 0.42, "step": 3, "steps": 10},
        {"name": "validation_accuracy", "value": 0.91, "step": 3, "steps": 10}]
    assert parse_line("  ##metric loss=1e-3") == [{"name": "loss", "value": 0.001, "step": None, "steps": None}]
    assert parse_line("##metric val/top-1.acc=-2") == [{"name": "val/top-1.acc", "value": -2.0, "step": None, "steps": None}]


@pytest.mark.parametrize("line", ["epoch 3 loss=0.4", "# metric loss=1", "##metrics loss=1", "x ##metric loss=1", ""])
def test_parse_line_leaves_other_lines_alone(line):
    assert parse_line(line) == []


@pytest.mark.parametrize(("line", "reason"), [
    ("##metric", "names no metric"),
    ("##metric step=3", "names no metric"),
    ("##metric loss", "'loss' is not name=value"),
    ("##metric loss=", "'loss=' is not name=value"),
    ("##metric loss=high", "the value of loss is not a number: 'high'"),
    ("##metric loss=inf", "the value of loss is not finite"),
    ("##metric loss=1 step=2.5", "step must be a whole number, not '2.5'"),
    ("##metric 3d=1", "'3d' is not a metric name"),
])
def test_parse_line_says_why_a_metric_line_is_malformed(line, reason):
    with pytest.raises(ValueError, match="##metric: .*" + reason.replace("(", r"\(")):
        parse_line(line)


def test_the_follower_gives_complete_lines_and_the_last_one_at_the_end(tmp_path):
    path = tmp_path / "log.txt"
    follower = Follower(path)
    assert list(follower.lines()) == []  # no file yet
    path.write_bytes(b"one\ntw")
    assert list(follower.lines()) == ["one"]
    with path.open("ab") as f:
        f.write(b"o\nthree")
    assert list(follower.lines()) == ["two"]
    assert list(follower.lines(final=True)) == ["three"]


def test_the_follower_reads_a_big_file_a_chunk_at_a_time(tmp_path):
    path = tmp_path / "log.txt"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(10_000)) + b"x" * 3000 + b"\n##metric loss=2 step=1\n")
    follower = Follower(path, chunk=1024)
    sizes = [len(c) for c in follower.chunks()]
    assert max(sizes) <= 1024 and sum(sizes) == path.stat().st_size  # the 3000-byte line is cut, not lost
    assert [f for _, f in Follower(path, chunk=1024).metric_lines()] == [
        [{"name": "loss", "value": 2.0, "step": 1, "steps": None}]]


def test_the_follower_skips_what_is_not_a_metric_in_a_metrics_file(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"name": "loss", "value": 0.5, "step": 1}\nnot json\n{"value": 1}\n{"name": "a", "value": 2, "steps": 4}\n')
    assert list(Follower(path).metrics()) == [{"name": "loss", "value": 0.5, "step": 1, "steps": None},
                                              {"name": "a", "value": 2.0, "step": None, "steps": 4}]
