"""`from azureml.core import Run` (sdk/compat): the run of a component's script, whose log()
records the node's metrics. Workspace, Experiment, Dataset... are not here: inside the designer
a script's inputs and outputs come on its command line."""
from .run import Run

__path__ = __import__("pkgutil").extend_path(__path__, __name__)
__all__ = ["Run"]
