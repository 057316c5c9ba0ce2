"""The symbolic bytecode interpreter, one module per family of opcodes.

core.py holds the step loop and the dispatch table; the families are mixins of one class.
"""
