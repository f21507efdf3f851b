"""`from azureml.core import Run` (sdk/compat): the run of a component's script, whose log()
records the node's metrics; `Model.get_model_path` for an endpoint's entry script (model.py).
Workspace, Experiment, Dataset... are not here: inside the designer a script's inputs and
outputs come on its command line."""
from .model import Model
from .run import Run

__path__ = __import__("pkgutil").extend_path(__path__, __name__)
__all__ = ["Model", "Run"]
