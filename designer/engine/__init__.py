"""The engine: plain Python. Imports neither Django nor torch."""
