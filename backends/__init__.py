"""Backends: turn fx_ir graphs into callables (eager, numpy, triton).

Installed as dynamo.backends; sees only fx_ir graphs and the op registry.
"""
