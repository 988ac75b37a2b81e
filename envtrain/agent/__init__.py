"""Policies (model backends), chat formatting and tool-call parsing. GPU backends import lazily."""
