"""The module catalogue: the module types a user's palette offers, built in and their components."""
