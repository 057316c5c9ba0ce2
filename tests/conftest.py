"""Shared test set-up: every test starts from an empty compile cache; --runslow enables slow cases;
an internal error of the compiler fails the test instead of falling back (config.strict); no timed
turns, so that every call runs the compiled code the test checks (tests/dynamo/test_timed_turns.py
turns them on and checks that they change nothing but time); the state a graph break keeps from the
first trace is checked against a retrace (config.check_break_reuse); backend "tiered" compiles a graph that is
due for "c" in the call that finds it due, not in a background thread, so that runs are deterministic."""
import os

import pytest

# strict in the programs the tests start too (python -m dynamo, pytest -p dynamo.pytest_plugin)
os.environ["DYNAMO_STRICT"] = "1"
os.environ["DYNAMO_TIMED_TURNS"] = "0"
os.environ["DYNAMO_CHECK_BREAK_REUSE"] = "1"  # a graph break's kept first trace is compared with a retrace

import dynamo  # noqa: E402

dynamo.config.strict = True  # dynamo may have been imported before this file (pytest -p)
dynamo.config.timed_turns = 0
dynamo.config.check_break_reuse = True
dynamo.config.tier_up_in_background = False


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
