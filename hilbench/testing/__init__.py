"""Kits for tests and plugin authors: what a plugin must do, checked against a counterpart."""
