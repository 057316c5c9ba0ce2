"""DYNAMO_LOGS artifacts as named loggers: dynamo.graph, dynamo.guards, dynamo.bytecode, ...
(`dynamic`: symbols of dynamic sizes, the facts guarded on them, and each specialization; `tiers`: graphs
of backend "tiered" moving from numpy to c, or staying on numpy, and why).

`DYNAMO_LOGS=graph,guards` turns those loggers on at DEBUG with a stderr handler.
"""
from __future__ import annotations

import logging

from . import config

ARTIFACTS = ("graph", "guards", "bytecode", "breaks", "recompiles", "output_code", "dynamic", "tiers")

_handler: logging.Handler | None = None


def get_artifact_logger(artifact: str) -> logging.Logger:
    if artifact not in ARTIFACTS:
        raise ValueError(f"unknown log artifact {artifact!r}; known: {', '.join(ARTIFACTS)}")
    return logging.getLogger(f"dynamo.{artifact}")


def set_logs(spec: str) -> None:
    """Enable the artifacts named in a comma-separated spec ('all' enables every one)."""
    global _handler
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if "all" in names:
        names = list(ARTIFACTS)
    unknown = [n for n in names if n not in ARTIFACTS]
    if unknown:
        raise ValueError(f"DYNAMO_LOGS: unknown artifact(s) {', '.join(unknown)}; known: {', '.join(ARTIFACTS)}")
    if names and _handler is None:
        _handler = logging.StreamHandler()
        _handler.setFormatter(logging.Formatter("[dynamo.%(artifact)s] %(message)s"))
        _handler.addFilter(_tag_artifact)
    for artifact in ARTIFACTS:
        logger = get_artifact_logger(artifact)
        if artifact in names:
            logger.setLevel(logging.DEBUG)
            if _handler is not None and _handler not in logger.handlers:
                logger.addHandler(_handler)
        elif _handler is not None and _handler in logger.handlers:
            logger.removeHandler(_handler)


def _tag_artifact(record: logging.LogRecord) -> bool:
    record.artifact = record.name.rpartition(".")[2]
    return True


if config.logs:
    set_logs(config.logs)
