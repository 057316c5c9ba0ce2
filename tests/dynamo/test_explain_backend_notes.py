"""Backend notes in explain() and the graph log: what a backend's compiled artifact says of a graph
(the `notes` attribute) is listed under that graph, for any backend."""
import logging

import numpy as np

import dynamo


class NotingBackend:
    """Runs the graph as traced and says something about each graph it compiled."""

    def __init__(self, notes):
        self.notes = notes

    def __call__(self, gm, example_inputs):
        notes = self.notes

        class Compiled:
            def __init__(self):
                self.notes = list(notes)

            def __call__(self, *args):
                return gm.forward(*args)
        return Compiled()


def test_explain_lists_each_graphs_backend_notes():
    def f(x):
        y = np.exp(x) + 1
        return y.sum()
    backend = NotingBackend(["exp runs as NumPy code: no kernel for it"])
    x = np.arange(4.0)
    report = dynamo.explain(f, backend=backend)(x)
    assert report.notes_per_graph == [["exp runs as NumPy code: no kernel for it"]]
    text = str(report)
    graph_line = next(k for k, line in enumerate(text.splitlines()) if line.startswith("Graph 1:"))
    assert text.splitlines()[graph_line + 1] == "  backend: exp runs as NumPy code: no kernel for it"
    np.testing.assert_allclose(dynamo.compile(f, backend=backend)(x), f(x))


def test_backends_without_notes_add_nothing():
    report = dynamo.explain(lambda x: x * 2, backend="eager")(np.ones(3))
    assert report.notes_per_graph == [[]]
    assert "backend:" not in str(report)


def test_a_string_or_a_method_named_notes_is_handled():
    from dynamo.output_graph import backend_notes

    class WithString:
        notes = "one note"

    class WithMethod:
        def notes(self):
            return ["not a list of notes"]
    assert backend_notes(WithString()) == ["one note"]
    assert backend_notes(WithMethod()) == []
    assert backend_notes(object()) == []


def test_graph_log_shows_the_notes(caplog):
    with caplog.at_level(logging.DEBUG, logger="dynamo.graph"):
        dynamo.compile(lambda x: x + 1, backend=NotingBackend(["add stays slow"]))(np.ones(2))
    assert any("add stays slow" in r.getMessage() for r in caplog.records if r.name == "dynamo.graph")
