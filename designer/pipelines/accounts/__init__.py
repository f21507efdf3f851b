"""Accounts: API tokens for scripts."""
