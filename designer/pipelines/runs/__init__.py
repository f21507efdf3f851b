"""Runs: submitting a pipeline, running its nodes on the workers (the launchers), events, logs, outputs, cancel, retention; the pipelines' and runs' API and pages."""
