"""`azureml.contrib.services` (sdk/compat): aml_response.AMLResponse for an entry script's run()."""
__path__ = __import__("pkgutil").extend_path(__path__, __name__)
