"""The module of a component file (modules/_component.py) run through the real executor: its
command runs in a copy of its code with the inputs' folders, the parameters and the output
folders; an output left empty is named; a distributed run hands the launcher the command."""
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from designer.engine import executor
from modules._component import CommandComponent, component_module
from sdk import component
from sdk.context import ENDED, DistributedJob, Stopped
from sdk.errors import CommandFailed, EmptyOutput
from sdk.formats.meta import artifact, read_meta, write_meta
from tests.conftest import ROOT
from tests.modules.runner import log_text

SCRIPT = textwrap.dedent("""\
    import pathlib, sys
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    out = pathlib.Path(args["--out"])
    text = pathlib.Path(args["--data"], "items.txt").read_text()
    if "--extra" in args:
        text += pathlib.Path(args["--extra"], "items.txt").read_text()
    (out / "result.txt").write_text(f"{text}|{args['--times']}|{args['--loud']}|{pathlib.Path.cwd().name}")
    (out / "_meta.yaml").write_text("type: Whatever\\ncount: 3\\nsource: script\\n")
    print("script done")
    print("##metric loss=0.25 step=1")
""")

DOC = {"kind": "tiny_command", "label": "Tiny Command", "version": 3, "distributed": True,
       "command": "python script.py --data {inputs.data} --out {outputs.result} --times {params.times} "
                  "--loud {params.loud} $[[--extra {inputs.extra}]]",
       "inputs": {"data": {"type": "folder", "label": "Data"}, "extra": {"type": "folder", "optional": True}},
       "outputs": {"result": {"type": "AnyDirectory", "label": "Result"}},
       "params": {"times": {"type": "int", "default": 2, "min": 1}, "loud": {"type": "bool"}},
       "metrics": ["loss"]}


def make_component(folder, script=SCRIPT, **changes):
    folder.mkdir(parents=True)
    (folder / "script.py").write_text(script)
    (folder / "component.yaml").write_text(yaml.safe_dump({**DOC, **changes}, sort_keys=False))
    return component_module(component.load(folder / "component.yaml"), origin="tests")


def data_folder(path, text):
    path.mkdir(parents=True)
    (path / "items.txt").write_text(text)
    write_meta(path, "ImageDirectory")
    return artifact(path)


def run(module, node_dir, inputs, params=None, run_settings=None, launcher=None, events=None):
    node = {"id": node_dir.name, "kind": module.kind, "parameters": params or {}, "run_settings": run_settings or {}}
    return executor.execute(module, node, inputs, node_dir, (events if events is not None else []).append,
                            launcher=launcher)


def test_it_declares_what_the_file_declares(tmp_path):
    module = make_component(tmp_path / "comp")
    assert issubclass(module, CommandComponent) and module.__name__ == "TinyCommandComponent"
    d = module.describe()
    assert (d["kind"], d["label"], d["version"], d["distributed"], d["timeout_setting"]) == ("tiny_command", "Tiny Command",
                                                                                           3, True, True)
    assert [p["name"] for p in d["inputs"]] == ["data", "extra"] and d["inputs"][1]["optional"] is True
    assert [p["type"] for p in d["params"]] == ["int", "bool"] and d["metrics"] == ["loss"]
    assert d["component"] == {"origin": "tests", "command": DOC["command"], "digest": module.component.digest(),
                              "arguments": {"--times": "times", "--loud": "loud"}}  # what a sweep may name
    assert module.code_digest() == module.component.digest()
    assert d["metric_step"] == "step"  # unless the file says what a step counts


def test_the_examples_count_epochs_so_their_nodes_show_epoch_3_of_10():
    root = Path(__file__).resolve().parents[2]
    for name in ("pytorch_train", "ddp_train", "ddp_train_per_node"):
        spec = component.load(root / "examples" / "components" / name / "component.yaml")
        assert component_module(spec).describe()["metric_step"] == "epoch", name


def test_a_command_runs_in_a_copy_of_its_code_with_folders_and_parameters(tmp_path):
    module = make_component(tmp_path / "comp")
    data = data_folder(tmp_path / "my data", "abc")
    events = []
    node_dir = tmp_path / "run" / "node 1"
    out = run(module, node_dir, {"data": data}, {"times": 4, "loud": True}, events=events)
    result = node_dir / "result"
    assert out == {"result": str(result)}
    assert (result / "result.txt").read_text() == "abc|4|true|code"
    assert read_meta(result) == {"type": "AnyDirectory", "count": 3, "source": "script"}  # the port type wins
    assert (node_dir / "code" / "script.py").is_file() and not (node_dir / "work").exists()
    log = log_text(node_dir)
    argv = [sys.executable, "script.py", "--data", str(data.path), "--out", str(result), "--times", "4", "--loud", "true"]
    assert f"runs {shlex.join(argv)} in {node_dir / 'code'}\n" in log
    assert "script done" in log
    assert [e.data for e in events if e.type == "metric"] == [{"name": "loss", "value": 0.25, "step": 1}]


def test_a_connected_optional_input_keeps_its_group(tmp_path):
    module = make_component(tmp_path / "comp")
    inputs = {"data": data_folder(tmp_path / "a", "a"), "extra": data_folder(tmp_path / "b", "b")}
    run(module, tmp_path / "node", inputs)
    assert (tmp_path / "node" / "result" / "result.txt").read_text() == "ab|2|false|code"


@pytest.mark.parametrize("script", ["print('nothing written')\n",
                                    "import sys, pathlib\npathlib.Path(sys.argv[4], '_meta.yaml').write_text('a: 1')\n"],
                         ids=["nothing", "only _meta.yaml"])
def test_an_output_left_empty_is_an_error_naming_the_port(tmp_path, script):
    module = make_component(tmp_path / "comp", script=script)
    with pytest.raises(EmptyOutput, match=r"^Tiny Command: output 'Result' is empty: the command wrote nothing to "
                                          r"\{outputs\.result\}$"):
        run(module, tmp_path / "node", {"data": data_folder(tmp_path / "d", "x")})
    assert not (tmp_path / "node" / "result").exists()
    assert "EmptyOutput: Tiny Command: output 'Result' is empty" in log_text(tmp_path / "node")


def test_a_failing_script_fails_the_node_with_its_traceback(tmp_path):
    module = make_component(tmp_path / "comp", script="raise RuntimeError('bad data in the script')\n")
    with pytest.raises(CommandFailed, match=r"(?s)^Tiny Command: .*RuntimeError: bad data in the script"):
        run(module, tmp_path / "node", {"data": data_folder(tmp_path / "d", "x")})


def test_a_distributed_run_hands_the_launcher_the_command_of_every_process(tmp_path):
    """The launcher here runs the job's one process itself, as a worker's torchrun would run each."""
    module = make_component(tmp_path / "comp")
    jobs = []

    def launcher(ctx, job: DistributedJob):
        jobs.append(job)
        subprocess.run([sys.executable, "-m", job.module, *job.argv], env={**job.env, "RANK": "0"}, check=True,
                       cwd=ROOT, capture_output=True)  # where a node's torchrun runs (supervision/launch.py)

    node_dir = tmp_path / "node"
    run(module, node_dir, {"data": data_folder(tmp_path / "d", "xyz")}, run_settings={
        "node_count": 2, "process_count_per_node": 1, "timeout_seconds": 30}, launcher=launcher)
    job, = jobs
    code = node_dir / "code"
    assert job.module == "supervision.command" and job.argv[:3] == ["--cwd", str(code), "--"]
    assert job.argv[3:5] == [sys.executable, "script.py"] and job.timeout == 30
    assert job.metrics_file.parent == job.stop_file.parent == node_dir / "work"
    assert job.env["DESIGNER_METRICS_FILE"] == str(job.metrics_file) and "RANK" not in job.env
    assert (node_dir / "result" / "result.txt").read_text() == "xyz|2|false|code"
    assert "(2 processes), timeout 30 s" in log_text(node_dir)


def test_a_distributed_job_its_launcher_ended_after_the_grace_completes_with_partial_outputs(tmp_path):
    """The launcher says the job was asked to stop and ended (launchers/distributed.py): no output is
    refused for being empty, each is marked partial, and the node's `stopped` event says how."""
    module = make_component(tmp_path / "comp")
    events, jobs = [], []

    def launcher(ctx, job: DistributedJob):
        jobs.append(job)
        return Stopped(ENDED, job.stop_grace, job.stop_grace + 0.1)  # it wrote nothing before it was ended

    node_dir = tmp_path / "node"
    node = {"id": "node", "kind": module.kind, "parameters": {},
            "run_settings": {"node_count": 2, "process_count_per_node": 1}}
    outputs = executor.execute(module, node, {"data": data_folder(tmp_path / "d", "xyz")}, node_dir, events.append,
                               launcher=launcher, stop_grace=7)
    assert jobs[0].stop_grace == 7
    assert read_meta(Path(outputs["result"])) == {"type": "AnyDirectory", "partial": True}
    stopped, = [e.data for e in events if e.type == "stopped"]
    assert stopped == {"how": ENDED, "grace": 7, "after": 7.1, "seen": False}
    assert "output 'Result' is empty: the script was ended before it wrote anything there" in log_text(node_dir)


TREE_SCRIPT = textwrap.dedent("""\
    import os, sys
    data, out = sys.argv[1], sys.argv[2]
    lines = []
    for split in sorted(os.listdir(data)):
        for cls in sorted(os.listdir(os.path.join(data, split))):
            names = sorted(os.listdir(os.path.join(data, split, cls)))
            lines.append(f"{split}/{cls}: " + ",".join(open(os.path.join(data, split, cls, n)).read() for n in names))
    open(os.path.join(out, "seen.txt"), "w").write("\\n".join(lines))
""")


def image_directory_of(path, rows, classes):
    """An ImageDirectory whose index points at files elsewhere (as Split's outputs do); each file holds its own name."""
    path.mkdir(parents=True)
    for file, _ in rows:
        Path(file).parent.mkdir(parents=True, exist_ok=True)
        Path(file).write_text(Path(file).parent.name + "/" + Path(file).name)
    (path / "index.csv").write_text("path,label\n" + "".join(f"{f},{label}\n" for f, label in rows))
    write_meta(path, "ImageDirectory", {"classes": classes, "count": len(rows), "labeled": True})
    return artifact(path)


def test_an_input_laid_out_as_an_image_folder_gets_class_folders_of_links_as_the_tutorial_reads_them(tmp_path):
    """Issue 29: scripts read <data>/train/<class>/*.jpg and <data>/val/...; Split's outputs are index
    files. Inputs declared `layout: image_folder` are ImageFolder trees of links; named train and val,
    their parent is the tutorial's data folder. Two images of one name in a class both arrive."""
    module = make_component(
        tmp_path / "comp", TREE_SCRIPT, command="python script.py {inputs.train}/.. {outputs.result}",
        inputs={"train": {"type": "ImageDirectory", "layout": "image_folder"},
                "val": {"type": "ImageDirectory", "layout": "image_folder"}}, params={}, distributed=False)
    src = tmp_path / "converted"
    train = image_directory_of(tmp_path / "split1", [(f"{src}/a/1.png", "cat"), (f"{src}/b/1.png", "cat"),
                                                      (f"{src}/a/2.png", "dog")], ["cat", "dog", "eel"])
    val = image_directory_of(tmp_path / "split2", [(f"{src}/c/3.png", "dog")], ["cat", "dog", "eel"])
    node_dir = tmp_path / "run" / "fit"
    run(module, node_dir, {"train": train, "val": val})
    assert (node_dir / "result" / "seen.txt").read_text().splitlines() == [
        "train/cat: a/1.png,b/1.png", "train/dog: a/2.png", "train/eel: ",  # every class has its folder
        "val/cat: ", "val/dog: c/3.png", "val/eel: "]
    link = node_dir / "inputs" / "train" / "dog" / "2.png"
    assert link.is_symlink() and link.resolve() == (src / "a" / "2.png").resolve()  # nothing copied
    assert "input 'Train': 3 images as an ImageFolder tree of 3 class folders (links)" in log_text(node_dir)


@pytest.mark.parametrize(("inputs", "field", "reason"), [
    ({"data": {"type": "ImageDirectory", "layout": "tree"}}, "inputs.data.layout", "'tree' is not a layout"),
    ({"data": {"type": "folder", "layout": "image_folder"}}, "inputs.data.layout",
     "image_folder lays out the images of an ImageDirectory input, not of a AnyDirectory"),
])
def test_a_layout_other_than_an_image_folder_of_an_image_directory_is_refused(tmp_path, inputs, field, reason):
    with pytest.raises(component.ComponentError) as e:
        make_component(tmp_path / "comp", command="python script.py {inputs.data} {outputs.result}", inputs=inputs,
                       params={})
    assert (e.value.field, reason in e.value.reason) == (field, True), str(e.value)


def test_an_unlabelled_image_or_a_class_that_is_not_a_folder_name_is_named(tmp_path):
    module = make_component(tmp_path / "comp", TREE_SCRIPT, command="python script.py {inputs.data} {outputs.result}",
                            inputs={"data": {"type": "ImageDirectory", "layout": "image_folder"}}, params={})
    bad = image_directory_of(tmp_path / "bad", [(f"{tmp_path}/i/1.png", "../../etc")], ["../../etc"])
    with pytest.raises(Exception, match=r"Tiny Command: the input 'Data' has a class '\.\./\.\./etc' that cannot be a folder"):
        run(module, tmp_path / "run" / "n1", {"data": bad})
    assert not (tmp_path / "etc").exists()
