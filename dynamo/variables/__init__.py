"""VariableTrackers: what the symbolic interpreter holds for each kind of value while tracing.

One module per family of values (arrays, constants, sequences, dicts, functions, objects, ...);
base.py defines the VariableTracker interface and builder.py turns real values into trackers.
"""
