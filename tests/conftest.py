"""Shared test set-up: every test starts from an empty compile cache; --runslow enables slow cases;
an internal error of the compiler fails the test instead of falling back (config.strict)."""
import os

import pytest

# strict in the programs the tests start too (python -m dynamo, pytest -p dynamo.pytest_plugin)
os.environ["DYNAMO_STRICT"] = "1"

import dynamo  # noqa: E402

dynamo.config.strict = True  # dynamo may have been imported before this file (pytest -p)


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    dynamo.reset()
    yield
    dynamo.reset()
