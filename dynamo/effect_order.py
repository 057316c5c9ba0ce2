"""Which graph ops may raise at run time, and where a trace breaks so that the side effects and
array writes a graph holds keep their order with an op that raises (plain Python's order)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .exc import Category, unsupported
from .fx_ir import ops as registry
from .fx_ir.tensor_meta import TensorMeta
from .guards import GuardKind
from .sources import StateSource

if TYPE_CHECKING:
    from .output_graph import OutputGraph

# linalg calls that raise LinAlgError on the data (a singular or non-positive-definite matrix)
_LINALG_RAISING = frozenset({"numpy.linalg.inv", "numpy.linalg.cholesky", "numpy.linalg.solve",
                             "numpy.linalg.eig", "numpy.linalg.eigh", "numpy.linalg.eigvals",
                             "numpy.linalg.eigvalsh", "numpy.linalg.svd", "numpy.linalg.lstsq",
                             "numpy.linalg.pinv", "numpy.linalg.matrix_power", "numpy.linalg.tensorinv",
                             "numpy.linalg.tensorsolve"})
_STATIC_INDEX = (int, slice, type(None), type(Ellipsis), bool, np.bool_)


def _dynamic_index(value: Any) -> bool:
    """An index whose bounds are known only from the data: an integer array, a run-time int."""
    if isinstance(value, (tuple, list)):
        return any(_dynamic_index(v) for v in value)
    if isinstance(value, TensorMeta):
        return value.dtype.kind in "iu"
    return not isinstance(value, _STATIC_INDEX)


def _scalar_into_integers(meta_args: list[Any]) -> bool:
    """`ints[...] = x` with x a float scalar (not an array): NumPy converts it as Python does, raising
    ValueError on NaN and OverflowError on infinity (fuzz seed 1063768: `v3[None] = a @ a`); an array's
    values are cast with a warning instead."""
    if len(meta_args) != 3:
        return False
    target, _, value = meta_args
    if not isinstance(target, TensorMeta) or target.dtype.kind not in "iu":
        return False
    if isinstance(value, TensorMeta):
        return value.scalar and value.dtype.kind in "fc"
    return isinstance(value, (float, complex, np.inexact)) and not np.isfinite(value)


def may_raise(op: Any, meta_args: list[Any], meta_kwargs: dict[str, Any]) -> bool:
    """Whether the call may raise while the graph runs, for values the trace cannot see: an index
    out of bounds, a singular matrix, an integer to a negative power, a floating-point error
    where np.errstate or the warnings filters make it an exception. Elementwise work, reductions,
    views and copies otherwise raise while tracing or never."""
    on_data = raises_on_data(op, meta_args, meta_kwargs)
    return errors_raise() if on_data is None else on_data


def raises_on_data(op: Any, meta_args: list[Any], meta_kwargs: dict[str, Any]) -> bool | None:
    """may_raise where the values decide; None where the error state does (a floating-point error
    raises only under np.errstate 'raise'/'call' or a warnings filter 'error')."""
    kind = op.kind
    if kind is registry.OpKind.INDEXING:
        return _dynamic_index(meta_args[1:]) or _dynamic_index(list(meta_kwargs.values())) \
            or (op.name == "operator.setitem" and _scalar_into_integers(meta_args))
    if kind is registry.OpKind.LINALG:
        return op.name in _LINALG_RAISING
    if kind is registry.OpKind.OTHER or kind is registry.OpKind.SCAN:
        return op.name not in ("numpy.sort", "numpy.argsort", "ndarray.argsort", "ndarray.sort", "numpy.diff")
    if kind is registry.OpKind.ELEMENTWISE and op.ufunc is np.power:
        if any(isinstance(a, TensorMeta) and a.dtype.kind in "iu" for a in meta_args):
            return True
    return None


def errors_raise() -> bool:
    """Whether a floating-point error raises now (np.errstate, a warnings filter turning
    RuntimeWarning into an error)."""
    from .backends.numpy_cpu.runtime import errors_raise as raise_now

    return raise_now()


class EffectOrder:
    """Keeps, within one graph, every op that may raise out of the way of what the graph cannot
    undo. A graph that writes none of the program's arrays runs the frame as written when it raises
    (codegen.rerun_handler): side effects before the raising op then happen as in Python. A graph
    that writes arrays cannot run again, so the trace breaks before whichever of the two comes
    second: an op that may raise after a write while side effects are pending, or a write after an
    op that may raise was recorded with side effects pending."""

    def __init__(self, output: "OutputGraph") -> None:
        self.output = output
        self.raising_after_effects = False  # an op that may raise was recorded with effects pending

    def before_op(self, op: Any, meta_args: list[Any], meta_kwargs: dict[str, Any], writes: bool,
                  label: str) -> None:
        effects_pending = bool(self.output.side_effects)
        if self.output.errstate:  # inside captured np.errstate blocks: whether it raises is theirs to say
            from .variables.errstate import applied

            with applied(self.output.errstate):
                return self._before_op(op, meta_args, meta_kwargs, writes, label, effects_pending)
        return self._before_op(op, meta_args, meta_kwargs, writes, label, effects_pending)

    def _before_op(self, op: Any, meta_args: list[Any], meta_kwargs: dict[str, Any], writes: bool, label: str,
                   effects_pending: bool) -> None:
        if writes and self.raising_after_effects:
            unsupported(Category.SIDE_EFFECT, f"{label} writes an array after an operation that may raise "
                        "once side effects are due; the graph ends before it so that they happen in order")
        if effects_pending and self._may_raise(op, meta_args, meta_kwargs):
            if self.output.numpy.memory.writes or writes:
                unsupported(Category.SIDE_EFFECT, f"{label} may raise after side effects and array writes; "
                            "the graph ends before it so that they happen in order")
            self.raising_after_effects = True

    def _may_raise(self, op: Any, meta_args: list[Any], meta_kwargs: dict[str, Any]) -> bool:
        """may_raise, and where the error state decided that the op cannot raise, a guard that it
        still says so when the compiled code runs: a call under np.errstate(all="raise") must not
        run a graph that lets an op raise after array writes while side effects are pending."""
        on_data = raises_on_data(op, meta_args, meta_kwargs)
        if on_data is not None:
            return on_data
        if errors_raise():
            return True
        self.output.guard(_ERROR_STATE, GuardKind.STATE, ErrorsQuiet(tuple(self.output.errstate)))
        return False


_ERROR_STATE = StateSource("NumPy's error state")


@dataclass(frozen=True)
class ErrorsQuiet:
    """Floating-point errors raise no exception now: the caller's NumPy error modes, with the
    settings of the captured np.errstate blocks around the op applied over them (outermost first),
    make none 'raise' or 'call', and no warnings filter turns a RuntimeWarning into an error."""

    blocks: tuple[Any, ...] = ()

    def __call__(self) -> bool:
        from .backends.numpy_cpu.runtime import error_modes, errors_raise, modes_raise, runtime_warnings_raise

        if not self.blocks:
            return not errors_raise()
        modes: dict[str, Any] = dict(error_modes())
        for settings in self.blocks:
            everything = dict(settings).get("all")
            if everything is not None:
                modes = dict.fromkeys(modes, everything)
            modes.update((kind, mode) for kind, mode in settings if kind != "all")
        return not modes_raise(modes) and not runtime_warnings_raise()

    def describe(self, name: str) -> str:
        inside = " inside np.errstate blocks" if self.blocks else ""
        return f"{name} makes no floating-point error an exception{inside} (np.errstate, warnings filters)"
