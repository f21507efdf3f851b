"""Module types of Pipeline Designer: one file per module type; see base.py for the declarations."""
