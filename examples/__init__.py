"""Worked examples on top of the library packages (`state`, `agents`, `hosting`).

Nothing here is registered by itself: `function_app.py` names what it hosts (the catalogue's
agents, `examples.catalog`, and the review workflow, `examples.review`).
"""
