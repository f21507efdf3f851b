"""Authoring: a user's pipeline drafts, stored, validated and bound to their datasets and models."""
