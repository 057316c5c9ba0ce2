"""fx_ir.thread_warnings: warnings ignored or raised in the compiling thread only, leaving the
filters other threads set (a compile in the background beside the program's catch_warnings)."""
from __future__ import annotations

import threading
import warnings

import pytest

from fx_ir.thread_warnings import compiler_filter, warnings_ignored, warnings_raised


def warn(message: str = "probe") -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=1)


def test_ignored_and_raised_in_this_thread_and_the_filters_left_as_they_were() -> None:
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        before = list(warnings.filters)
        with warnings_ignored():
            warn()
        with warnings_raised(), pytest.raises(RuntimeWarning, match="probe"):
            warn()
        with warnings_raised(), warnings_ignored():  # the innermost mode applies
            warn()
        with warnings_ignored():
            with warnings_raised(), pytest.raises(RuntimeWarning):
                warn()
            warn()  # ignored again once the inner mode ended
        assert warnings.filters == before
        warn("shown")
    assert [str(w.message) for w in shown] == ["shown"]


def test_other_threads_warnings_are_shown_meanwhile() -> None:
    inside, done = threading.Event(), threading.Event()

    def compiling() -> None:
        with warnings_ignored():
            inside.set()
            done.wait(10)
            warn("compiler's")

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        thread = threading.Thread(target=compiling)
        thread.start()
        inside.wait(10)
        warn("program's")
        done.set()
        thread.join()
    assert [str(w.message) for w in shown] == ["program's"]


def test_a_compile_ending_inside_the_programs_catch_warnings_keeps_its_filter() -> None:
    # the order that made NumPy's test_nanfunctions fail under the plugin: the compile enters its
    # mode, the test enters catch_warnings and ignores RuntimeWarning, the compile leaves, the test warns
    entered, program_inside, left = threading.Event(), threading.Event(), threading.Event()

    def compiling() -> None:
        with warnings_ignored():
            entered.set()
            program_inside.wait(10)
        left.set()

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pytest's filterwarnings = error
        thread = threading.Thread(target=compiling)
        thread.start()
        entered.wait(10)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            program_inside.set()
            left.wait(10)
            warn()  # ignored, as the program asked (catch_warnings in the compile raised it here)
        thread.join()
        # the list the inner catch_warnings put back still holds the compile's entry (it was the
        # current list when the compile entered): inert, it matches no thread's warning now
        assert any(compiler_filter(entry) for entry in warnings.filters)
        with pytest.raises(RuntimeWarning):
            warn()
