"""The module SDK: everything a module author reads, and nothing else of the project.

Declarations (port types, ports, parameter types, errors), the context a module receives, and
the on-disk format of each port type with its one reader and one writer. It imports nothing of
the project, neither Django nor torch: modules, training, the engine and the web app import it.
"""
