"""Issue 43, item 3: MLflow models kept. In a component's script `import mlflow` gives
`mlflow.pytorch` as MLflow's does; log_model(model, "model") keeps an MLflow model folder in MLflow's
layout (MLmodel, data/model.pth pickled by value, requirements) as an output: the one declared
`type: mlflow_model`, or one made for the node; save_model(model, path) writes the same folder. Run
through the real executor, each script in its own process; the folder is loaded back in another
process that has not the script's class (mlflow.pyfunc), as an endpoint loads it."""
import json
import subprocess
import sys
import textwrap

import yaml

from modules._component import MADE_MLFLOW_OUTPUT
from sdk import compat
from sdk.formats import custom_model
from sdk.formats.meta import read_meta
from tests.conftest import ROOT
from tests.modules.runner import log_text
from tests.modules.test_component_module import make_component, run

TRAIN = textwrap.dedent("""\
    import json, pathlib, sys
    import mlflow                     # no `import mlflow.pytorch`: it comes with mlflow, as MLflow's does
    import torch

    class Doubler(torch.nn.Module):   # a class of the script's own (__main__): pickled by value
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(3, 2)

        def forward(self, x):
            return 2 * self.linear(x)

    torch.manual_seed(0)
    model = Doubler()
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    with mlflow.start_run():
        info = mlflow.pytorch.log_model(model, "model")
    x = torch.tensor([[1.0, 2.0, 3.0]])
    pathlib.Path(args["--out"], "expected.json").write_text(json.dumps(model(x).tolist()))
    if "--saved" in args:
        mlflow.pytorch.save_model(model, args["--saved"])
    print("logged", info.model_uri)
""")
LOAD = textwrap.dedent("""\
    import json, sys
    import mlflow
    import numpy as np
    model = mlflow.pyfunc.load_model(sys.argv[1])
    print(json.dumps(model.predict(np.array([[1.0, 2.0, 3.0]], dtype=np.float32)).tolist()))
""")


def predictions_of(folder, tmp_path):
    """What the MLflow model folder predicts, loaded in a process that has no Doubler class."""
    (tmp_path / "load.py").write_text(LOAD)
    env = {"PYTHONPATH": ":".join([*compat.search_path(), str(ROOT)]), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "load.py", str(folder)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_logged_model_becomes_an_mlflow_model_output_made_for_the_node_and_loads_elsewhere(tmp_path):
    module = make_component(tmp_path / "comp", TRAIN, command="python script.py --out {outputs.result}",
                            inputs={}, params={}, outputs={"result": {"type": "AnyDirectory"}}, distributed=False)
    outputs = run(module, tmp_path / "node", {})
    assert set(outputs) == {"result", MADE_MLFLOW_OUTPUT}
    folder = tmp_path / "node" / MADE_MLFLOW_OUTPUT
    assert str(folder) == outputs[MADE_MLFLOW_OUTPUT]
    # MLflow's layout: what MLflow's own mlflow.pytorch.load_model and pyfunc read
    mlmodel = yaml.safe_load((folder / "MLmodel").read_text())
    assert mlmodel["artifact_path"] == "model"
    assert mlmodel["flavors"]["pytorch"]["model_data"] == "data"
    pyfunc = mlmodel["flavors"]["python_function"]
    assert (pyfunc["loader_module"], pyfunc["data"], pyfunc["pickle_module_name"]) == (
        "mlflow.pytorch", "data", "mlflow.pytorch.pickle_module")
    assert pyfunc["env"] == {"conda": "conda.yaml", "virtualenv": "python_env.yaml"}
    assert (folder / "data" / "model.pth").is_file()
    assert (folder / "data" / "pickle_module_info.txt").read_text() == "mlflow.pytorch.pickle_module"
    requirements = (folder / "requirements.txt").read_text().split()
    assert "mlflow" in requirements and any(r.startswith("torch==") for r in requirements)
    assert any(r.startswith("cloudpickle==") for r in requirements)
    assert yaml.safe_load((folder / "conda.yaml").read_text())["dependencies"][-1] == {"pip": requirements}
    # an output like any other: typed as a model (it registers), its format mlflow
    assert read_meta(folder)["type"] == "ModelDirectory"
    assert custom_model.format_of(folder) == custom_model.MLFLOW
    log = log_text(tmp_path / "node")
    assert "mlflow.pytorch.log_model('model'): an MLflow model, kept as output 'mlflow_model' of the node" in log
    expected = json.loads((tmp_path / "node" / "result" / "expected.json").read_text())
    got = predictions_of(folder, tmp_path)
    assert abs(got[0][0] - expected[0][0]) < 1e-6 and abs(got[0][1] - expected[0][1]) < 1e-6


def test_a_declared_mlflow_model_output_takes_the_logged_model_and_save_model_writes_the_same_folder(tmp_path):
    module = make_component(tmp_path / "comp", TRAIN, inputs={}, params={}, distributed=False,
                            command="python script.py --out {outputs.result} --saved {outputs.saved}",
                            outputs={"result": {"type": "AnyDirectory"}, "model": {"type": "mlflow_model"},
                                     "saved": {"type": "mlflow_model"}})
    assert module.component.mlflow_outputs == ("model", "saved")
    outputs = run(module, tmp_path / "node", {})
    assert set(outputs) == {"result", "model", "saved"}  # nothing made: the script's model went where declared
    for name in ("model", "saved"):
        folder = tmp_path / "node" / name
        assert custom_model.format_of(folder) == custom_model.MLFLOW and (folder / "data" / "model.pth").is_file()
    assert "kept as output 'model' of the node" in log_text(tmp_path / "node")
    assert "artifact_path" not in yaml.safe_load((tmp_path / "node" / "saved" / "MLmodel").read_text())  # save_model's


def test_a_script_that_logs_no_model_gets_no_made_output(tmp_path):
    module = make_component(tmp_path / "comp", "import pathlib, sys\npathlib.Path(sys.argv[1], 'a').write_text('a')\n",
                            command="python script.py {outputs.result}", inputs={}, params={}, distributed=False,
                            outputs={"result": {"type": "AnyDirectory"}})
    assert set(run(module, tmp_path / "node", {})) == {"result"}
    assert not (tmp_path / "node" / MADE_MLFLOW_OUTPUT).exists()
