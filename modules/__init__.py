"""Module types of Pipeline Designer: one file per module type; what they declare and receive is in sdk/."""
