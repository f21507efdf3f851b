"""`azureml.contrib` (sdk/compat): `azureml.contrib.services.aml_response.AMLResponse` only."""
__path__ = __import__("pkgutil").extend_path(__path__, __name__)
