"""fx_ir: the six-opcode graph IR shared by the dynamo frontend and every backend.

Installed as dynamo.fx_ir; it imports nothing from dynamo or backends.
"""
