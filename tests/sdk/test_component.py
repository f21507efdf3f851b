"""Component files (sdk/component.py): a valid file read back field by field; every kind of
invalid file refused naming the file, the field and the reason; the command rendered word by
word; the digest of the file and its code."""
import os
import pickle
import sys

import pytest
import yaml

from sdk import command_vars, component
from sdk.component import ComponentError
from sdk.declarations import AnyDirectory, Bool, Choice, Float, ImageDirectory, Int, ModelDirectory, Text

VALID = {
    "kind": "tiny_train",
    "label": "Tiny Train (script)",
    "category": "My components",
    "version": 2,
    "description": "Trains nothing, quickly.",
    "distributed": True,
    "code": "src",
    "command": "python train.py --data {inputs.data} --epochs {params.epochs} --lr {params.lr} "
               "--pretrained {params.pretrained} --opt {params.optimizer} --note {params.note} "
               "--out {outputs.model} $[[--val {inputs.validation}]]",
    "inputs": {"data": {"type": "ImageDirectory", "label": "Training data", "help": "labelled images"},
               "validation": {"type": "folder", "optional": True}},
    "outputs": {"model": {"type": "ModelDirectory", "label": "Model"}},
    "params": {"epochs": {"type": "int", "default": 5, "min": 1, "max": 1000, "help": "passes over the data"},
               "lr": {"type": "float", "default": 0.001, "min": 0, "min_exclusive": True},
               "pretrained": {"type": "bool", "default": False},
               "optimizer": {"type": "choice", "choices": ["sgd", "adam"], "default": "sgd"},
               "note": {"type": "string", "default": ""}},
    "metrics": ["training_loss", "validation_accuracy"],
}


def write(folder, doc=None, text=None, code=True):
    folder.mkdir(parents=True, exist_ok=True)
    if code:
        (folder / "src").mkdir(exist_ok=True)
        (folder / "src" / "train.py").write_text("print('training')\n")
    path = folder / "component.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(doc if doc is not None else VALID, sort_keys=False))
    return path


def changed(**fields):
    """VALID with fields replaced (None: removed); dotted names reach into inputs/params..."""
    doc = yaml.safe_load(yaml.safe_dump(VALID, sort_keys=False))
    for dotted, value in fields.items():
        *parents, last = dotted.split("__")
        target = doc
        for p in parents:
            target = target[p]
        if value is None:
            target.pop(last)
        else:
            target[last] = value
    return doc


def test_a_valid_file_is_read_back_field_by_field(tmp_path):
    spec = component.load(write(tmp_path / "c"))
    assert (spec.kind, spec.label, spec.category, spec.version) == ("tiny_train", "Tiny Train (script)", "My components", 2)
    assert spec.description == "Trains nothing, quickly." and spec.distributed is True
    assert spec.file == tmp_path / "c" / "component.yaml" and spec.folder == tmp_path / "c"
    assert spec.code == (tmp_path / "c" / "src").resolve()
    assert spec.metrics == ("training_loss", "validation_accuracy")
    data, validation = spec.inputs
    assert (data.name, data.label, data.type, data.optional, data.help) == ("data", "Training data", ImageDirectory, False,
                                                                            "labelled images")
    assert (validation.label, validation.type, validation.optional) == ("Validation", AnyDirectory, True)
    assert [(p.name, p.label, p.type) for p in spec.outputs] == [("model", "Model", ModelDirectory)]
    epochs, lr, pretrained, optimizer, note = spec.params
    assert isinstance(epochs, Int) and (epochs.default, epochs.min, epochs.max, epochs.help) == (5, 1, 1000, "passes over the data")
    assert isinstance(lr, Float) and lr.min_exclusive and lr.check(0) and lr.check(0.5) is None
    assert isinstance(pretrained, Bool) and isinstance(optimizer, Choice) and optimizer.choices == ("sgd", "adam")
    assert isinstance(note, Text) and note.default == ""
    # the same declarations as a built-in module's: the pane and validation read them alike
    assert epochs.describe() == Int("Epochs", default=5, min=1, max=1000, help="passes over the data").describe()


def test_defaults_and_short_forms(tmp_path):
    doc = {"kind": "short", "label": "Short", "command": "python3 run.py {outputs.out} {params.rate}",
           "outputs": {"out": "folder"}, "params": {"rate": {"type": "float", "default": "1e-3"},
                                                   "mode": {"type": "choice", "choices": ["a", "b"]},
                                                   "num_epochs": {"type": "integer", "default": 2}}}
    spec = component.load(write(tmp_path / "c", doc))
    assert (spec.version, spec.category, spec.distributed, spec.metrics) == (1, "Custom components", False, ())
    assert spec.code == (tmp_path / "c").resolve()
    assert spec.outputs[0].type == AnyDirectory and spec.outputs[0].label == "Out"
    rate, mode, epochs = spec.params
    assert rate.default == 0.001  # PyYAML reads 1e-3 (no dot) as text: a float parameter takes it as a number
    assert mode.default == "a" and epochs.label == "Num Epochs" and isinstance(epochs, Int)


INVALID = [
    # (what, the file's document or text, field, reason)
    ("not YAML", "kind: [unclosed\n", "file", "not YAML (line"),
    ("not a mapping", "- kind\n- label\n", "file", "expected a mapping of fields"),
    ("empty file", "", "file", "expected a mapping of fields"),
    ("missing field", changed(command=None), "command", "missing"),
    ("unknown field", changed(entry="train.py"), "entry", "unknown field"),
    ("bad kind", changed(kind="Tiny-Train"), "kind", "'Tiny-Train' is not a kind"),
    ("bad version", changed(version=0), "version", "expected a whole number from 1 to 2,147,483,647, got 0"),
    ("version as text", changed(version="2"), "version", "expected a whole number from 1 to 2,147,483,647, got '2'"),
    ("version past the database", changed(version=2**70), "version", f"from 1 to 2,147,483,647, got {2**70}"),
    ("nested thousands deep", "kind: " + "[" * 20000, "file", "nested too deeply, or holds an integer too long to read"),
    ("an integer of 5000 digits", yaml.safe_dump(changed(version=None)) + "version: " + "9" * 5000 + "\n", "file", "nested too deeply, or holds"),
    ("billion laughs", "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9)), "j", "it stands for more than 100,000 values once its aliases (*name) are expanded"),  # 9**9
    ("label not text", changed(label=["a"]), "label", "expected text"),
    ("a NUL character", yaml.safe_dump(changed(label=None)) + 'label: "Tiny\\0Train"\n', "label",
     "label holds a NUL character (\\0), which no database stores"),
    ("distributed not a flag", changed(distributed="yes please"), "distributed", "expected true or false"),
    ("unknown port type", changed(inputs__data__type="Tensor"), "inputs.data.type", "unknown port type 'Tensor'"),
    ("port type missing", changed(inputs__data={"label": "Data"}), "inputs.data.type", "missing"),
    ("unknown port field", changed(outputs__model__optional=True), "outputs.model.optional", "unknown field of an output"),
    ("bad port name", changed(inputs={"Data": "ImageDirectory"}), "inputs.Data", "'Data' is not a name"),
    ("inputs not a mapping", changed(inputs=["data"]), "inputs", "expected a mapping of names"),
    ("name used twice", changed(params__data={"type": "int", "default": 1}), "params.data",
     "the name 'data' is already used by inputs.data"),
    ("label used twice", changed(inputs__validation__label="training data"), "inputs.validation.label",
     "'training data' is already the label of inputs.data"),
    ("bad param type", changed(params__epochs__type="list"), "params.epochs.type", "unknown parameter type 'list'"),
    ("unknown param field", changed(params__pretrained__min=1), "params.pretrained.min", "unknown field of a bool parameter"),
    ("default of the wrong type", changed(params__epochs__default=2.5), "params.epochs.default", "expected a whole number"),
    ("default out of range", changed(params__epochs__default=0), "params.epochs.default", "0 is out of range: must be >= 1"),
    ("number without default", changed(params__epochs__default=None), "params.epochs.default", "missing"),
    ("bool default", changed(params__pretrained__default="no"), "params.pretrained.default", "expected true or false"),
    ("empty range", changed(params__epochs__min=10, params__epochs__max=2), "params.epochs.max", "the range is empty"),
    ("bound not a number", changed(params__lr__max="big"), "params.lr.max", "expected a finite number"),
    ("no choices", changed(params__optimizer__choices=[]), "params.optimizer.choices", "non-empty list"),
    ("choice listed twice", changed(params__optimizer__choices=["sgd", "sgd"]), "params.optimizer.choices", "listed twice"),
    ("default not a choice", changed(params__optimizer__default="rmsprop"), "params.optimizer.default",
     "'rmsprop' is not one of: sgd, adam"),
    ("placeholder naming nothing", changed(command="python train.py {params.nope} {outputs.model} {inputs.data}"),
     "command", "{params.nope} names no declared param (declared params: epochs, lr, pretrained, optimizer, note)"),
    ("unknown placeholder group", changed(command="python train.py {input.data}"), "command",
     "{input.data}: unknown placeholder group 'input'"),
    ("optional input outside a group", changed(command="python train.py {inputs.validation}"), "command",
     "{inputs.validation} is an optional input: put it in an optional group"),
    ("group without optional input", changed(command="python train.py $[[--data {inputs.data}]]"), "command",
     "holds no optional input"),
    ("group never closed", changed(command="python train.py $[[--val {inputs.validation}"), "command", "never closed"),
    ("unbalanced quote", changed(command="python train.py --note 'oops {outputs.model}"), "command",
     "cannot be split into words: No closing quotation"),
    ("output never passed", changed(command="python train.py --data {inputs.data}"), "outputs.model",
     "never passed to the command: add {outputs.model} where the script takes the folder to write it in"),
    ("empty command", changed(command="   "), "command", "empty"),
    ("code folder missing", changed(code="nowhere"), "code", "'nowhere': no such folder"),
    ("code folder outside", changed(code=".."), "code", "'..' leads outside the component's folder"),
    ("metrics not names", changed(metrics="loss"), "metrics", "expected a list of metric names"),
    ("metric step not a word", changed(metric_step="Epoch 1"), "metric_step",
     "'Epoch 1' is not a word such as epoch, step or iteration"),
    ("unknown launch", changed(launch="per_gpu"), "launch", "'per_gpu' is not a launch: per_process (the designer "
     "starts every process) or per_node (the command starts its node's processes)"),
    ("per-node launch of one process", changed(launch="per_node", distributed=False), "launch",
     "per_node is a way to start a distributed job: add `distributed: true`"),
]


@pytest.mark.parametrize("what, doc, field, reason", INVALID, ids=[case[0] for case in INVALID])
def test_every_kind_of_invalid_file_is_refused_naming_file_field_and_reason(tmp_path, what, doc, field, reason):
    path = write(tmp_path / "c", **({"text": doc} if isinstance(doc, str) else {"doc": doc}))
    with pytest.raises(ComponentError) as caught:
        component.load(path)
    e = caught.value
    assert (e.file, e.field) == (str(path), field), str(e)
    assert reason in e.reason, str(e)
    assert str(e).startswith(f"{path}: {field}: {e.reason}")


def test_a_key_declared_twice_is_refused_with_its_lines(tmp_path):
    text = yaml.safe_dump(VALID, sort_keys=False) + "kind: other\n"
    path = write(tmp_path / "c", text=text)
    with pytest.raises(ComponentError, match=r"component\.yaml: kind: declared twice \(lines 1 and \d+\)"):
        component.load(path)
    text = text.replace("kind: other\n", "").replace("  note:\n", "  epochs:\n")
    with pytest.raises(ComponentError, match=r"params\.epochs: declared twice \(lines \d+ and \d+\)"):
        component.load(write(tmp_path / "c", text=text))


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(ComponentError, match=r"nowhere/component\.yaml: file: no such file"):
        component.load(tmp_path / "nowhere" / "component.yaml")


def test_every_problem_of_a_file_is_listed_one_a_line(tmp_path):
    path = write(tmp_path / "c", changed(kind="Bad", version=-1, params__epochs__default="five"))
    with pytest.raises(ComponentError) as caught:
        component.load(path)
    assert [f for f, _ in caught.value.problems] == ["kind", "params.epochs.default", "version"]
    assert str(caught.value).splitlines()[2].startswith(f"{path}: version: ")
    again = pickle.loads(pickle.dumps(caught.value))  # a worker's error crosses processes intact
    assert (again.file, again.field, again.reason, str(again)) == (str(path), "kind", caught.value.reason, str(caught.value))


PARAMS = {"epochs": 3, "lr": 0.5, "pretrained": True, "optimizer": "adam", "note": ""}


def test_render_splits_words_first_so_that_a_folder_with_spaces_stays_one_argument(tmp_path):
    spec = component.load(write(tmp_path / "c"))
    argv = component.render(spec, {"data": "/data/my images", "validation": None}, PARAMS, {"model": "/out/a b"},
                            python=sys.executable)
    assert argv == [sys.executable, "train.py", "--data", "/data/my images", "--epochs", "3", "--lr", "0.5",
                    "--pretrained", "true", "--opt", "adam", "--note", "", "--out", "/out/a b"]


def test_render_keeps_the_optional_group_only_when_its_input_is_connected(tmp_path):
    spec = component.load(write(tmp_path / "c"))
    kept = component.render(spec, {"data": "/d", "validation": "/v w"}, PARAMS, {"model": "/o"}, python="py")
    assert kept[-2:] == ["--val", "/v w"] and kept[0] == "py"
    dropped = component.render(spec, {"data": "/d"}, {**PARAMS, "pretrained": False, "lr": 1e-05}, {"model": "/o"}, "py")
    assert "--val" not in dropped and dropped[-2:] == ["--out", "/o"]
    assert dropped[dropped.index("--lr") + 1] == "1e-05" and dropped[dropped.index("--pretrained") + 1] == "false"


def test_render_takes_placeholders_inside_words_quotes_and_azure_form(tmp_path):
    doc = changed(command="""sh -c 'echo "{params.note}"' --out={outputs.model} ${{inputs.data}} x{params.epochs}y""")
    spec = component.load(write(tmp_path / "c", doc))
    argv = component.render(spec, {"data": "/d"}, {**PARAMS, "note": "two words"}, {"model": "/o p"}, "py")
    assert argv == ["sh", "-c", 'echo "two words"', "--out=/o p", "/d", "x3y"]
    with pytest.raises(ComponentError, match=r"inputs\.data: Tiny Train \(script\): the input is not connected"):
        component.render(spec, {"data": None}, PARAMS, {"model": "/o"}, "py")


PER_NODE = ("python -m torch.distributed.launch --nproc_per_node 2 --nnodes 2 --node_rank $NODE_RANK "
            "--master_addr $MASTER_ADDR --master_port ${MASTER_PORT} --use_env train.py --note {params.note} "
            "--out {outputs.model} --data {inputs.data}")


def test_the_originals_per_node_launch_command_expands_each_nodes_variables_and_never_a_value(tmp_path):
    """Issue 29: `--node_rank $NODE_RANK` failed with "invalid int value: '$NODE_RANK'". The
    variables of the command (not of a parameter's value) are each process's own."""
    spec = component.load(write(tmp_path / "c", changed(command=PER_NODE, launch="per_node")))
    assert spec.launch == "per_node" and component.load(write(tmp_path / "d")).launch == "per_process"
    argv = component.render(spec, {"data": "/d"}, {**PARAMS, "note": "$NODE_RANK; rm -rf ~"}, {"model": "/o"}, "py")
    assert command_vars.shown(argv)[:11] == ["py", "-m", "torch.distributed.launch", "--nproc_per_node", "2", "--nnodes",
                                             "2", "--node_rank", "$NODE_RANK", "--master_addr", "$MASTER_ADDR"]
    node1 = {"NODE_RANK": "1", "MASTER_ADDR": "10.0.0.4", "MASTER_PORT": "29400"}
    expanded = command_vars.expand(argv, node1)
    assert expanded[7:14] == ["--node_rank", "1", "--master_addr", "10.0.0.4", "--master_port", "29400", "--use_env"]
    assert expanded[expanded.index("--note") + 1] == "$NODE_RANK; rm -rf ~"  # a value is passed as written
    assert command_vars.used(spec.command) == ["NODE_RANK", "MASTER_ADDR", "MASTER_PORT"]
    assert command_vars.expand(["$HOME", "x$NODE_RANKS"], node1) == ["$HOME", "x$NODE_RANKS"]  # only the listed names
    with pytest.raises(command_vars.UnknownVariable, match=r"the command uses \$MASTER_PORT, which this process does not"):
        command_vars.expand(argv, {"NODE_RANK": "0", "MASTER_ADDR": "h"})


def test_the_digest_changes_with_the_code_and_the_file_and_not_otherwise(tmp_path):
    path = write(tmp_path / "c")
    spec = component.load(path)
    first = spec.digest()
    assert len(first) == 64 and component.load(path).digest() == first
    (spec.code / "__pycache__").mkdir()
    (spec.code / "__pycache__" / "train.cpython-311.pyc").write_bytes(b"\0cache")
    assert spec.digest() == first  # caches are not code
    script = spec.code / "train.py"
    script.write_text("print('training!')\n")
    second = spec.digest()
    assert second != first
    (spec.code / "helpers").mkdir()
    (spec.code / "helpers" / "util.py").write_text("")
    assert spec.digest() != second  # a new file, even empty
    third = spec.digest()
    path.write_text(path.read_text().replace("Trains nothing", "Trains nought"))
    assert spec.digest() != third


def test_the_digest_is_memoised_on_path_time_and_size(tmp_path):
    """A file is hashed again only when its modification time or size changed: repeated calls
    (each palette listing, each cache key) cost a stat per file."""
    path = write(tmp_path / "c")
    spec = component.load(path)
    script = spec.code / "train.py"
    first = spec.digest()
    stat = script.stat()
    script.write_text("print('TRAINING')\n")  # the same size...
    os.utime(script, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # ...and time: not read again
    assert script.stat().st_size == stat.st_size and spec.digest() == first
    os.utime(script, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert spec.digest() != first


def test_copy_code_makes_a_fresh_copy_without_caches(tmp_path):
    spec = component.load(write(tmp_path / "c"))
    (spec.code / "__pycache__").mkdir()
    dest = tmp_path / "node" / "code"
    dest.mkdir(parents=True)
    (dest / "stale.txt").write_text("from a previous run")
    component.copy_code(spec, dest)
    assert sorted(p.name for p in dest.iterdir()) == ["train.py"]


def test_find_searches_folders_recursively_and_skips_a_missing_one(tmp_path):
    write(tmp_path / "comps" / "a")
    write(tmp_path / "comps" / "group" / "b")
    assert component.find(tmp_path / "comps") == [tmp_path / "comps" / "a" / "component.yaml",
                                                  tmp_path / "comps" / "group" / "b" / "component.yaml"]
    assert component.find(tmp_path / "missing") == []


def test_a_command_written_as_a_list_is_told_once_to_be_text(tmp_path):
    """Kubeflow writes `command:` as a list: one problem says it must be text, not also "empty"."""
    path = write(tmp_path / "c", changed(command=["python", "train.py"]))
    with pytest.raises(ComponentError) as caught:
        component.load(path)
    assert [f for f, _ in caught.value.problems] == ["command"]
    assert "expected text" in caught.value.reason


def test_an_alias_bomb_in_a_field_is_refused_at_once_and_no_message_quotes_a_whole_value(tmp_path):
    import time
    import tracemalloc

    bomb = "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10))  # 10^10 values in 0.6 KB
    text = yaml.safe_dump({k: v for k, v in VALID.items() if k != "label"}, sort_keys=False)
    tracemalloc.start()
    started = time.process_time()  # CPU seconds of this process: other jobs on the machine do not count
    with pytest.raises(ComponentError) as caught:
        component.load(write(tmp_path / "bomb", text=bomb + text + "label: *l9\n"))
    seconds, (_, peak) = time.process_time() - started, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert seconds < 1.0 and peak < 10 * 2**20, (seconds, peak)
    assert caught.value.field == "label" and "stands for more than 100,000 values" in caught.value.reason, str(caught.value)
    # under the bound, a value of 10,000 items and one of a million characters are quoted in a few words
    wide = changed(label=list(range(10_000)), metrics="m" * 1_000_000, version="9" * 100_000)
    with pytest.raises(ComponentError) as caught:
        component.load(write(tmp_path / "wide", doc=wide))
    reasons = caught.value.problems
    assert ("label", "expected text, got [0, 1, 2, 3, 4, 5, ...]") in reasons, reasons
    assert all(len(r) < 200 for _, r in reasons), reasons
