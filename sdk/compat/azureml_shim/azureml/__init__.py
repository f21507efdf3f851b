"""The designer's `azureml` (sdk/compat): `azureml.core.Run` only. The path is extended as the
original's namespace package does, so that the other packages of a real installation
(`azureml.data`, `azureml.train`...) stay importable beside it."""
__path__ = __import__("pkgutil").extend_path(__path__, __name__)
