"""dynamo: a JIT compiler for unmodified NumPy programs, built like TorchDynamo.

Public API: compile, explain, reset, disable, enable, config, list_backends, register_backend.
"""
