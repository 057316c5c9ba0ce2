"""A fuzzing campaign: generates programs, checks each on every backend, sorts failures into the
known classes others own and the rest, minimizes new kinds of failure, and summarizes."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable

from fuzz_harness import Failure, Timeout, check_source
from fuzz_known import known_class
from fuzz_minimize import minimize


def generator(kind: str) -> Callable[[int], Any]:
    """The program generator of a kind: "numpy" (fuzz_programs: functions over arrays) or "python"
    (fuzz_python: pure-Python functions over ints, strings, containers and user objects)."""
    if kind == "python":
        from fuzz_python import generate
    else:
        from fuzz_programs import generate
    return generate


def default_backends() -> list[str]:
    """Every CPU backend registered: eager, numpy (default blocks and tiny ones), and c if present."""
    from dynamo.backends.registry import list_backends

    names = ["eager", "numpy", "numpy-tiny"]
    return names + (["c"] if "c" in list_backends() else [])


class Campaign:
    def __init__(self, backends: list[str], *, minimize: bool = False, minimize_seconds: float = 120.0,
                 out: Path | None = None, log: Callable[[str], Any] | None = print, kind: str = "numpy") -> None:
        self.backends = backends
        self.kind = kind
        self.generate = generator(kind)
        self.minimize = minimize
        self.minimize_seconds = minimize_seconds
        self.out = out
        self.log = log or (lambda text: None)
        self.programs = Counter[str]()
        self.failures: list[tuple[Failure, str | None]] = []   # (failure, minimized source)
        self.known = Counter[str]()
        self.skipped = 0
        self.kinds: set[tuple[str, str]] = set()
        # called before each check (seed, backend) and after it (seed, backend, outcome): the
        # parallel runner's watchdog learns from them which program a silent worker is stuck in
        self.on_start: Callable[[int, str], Any] = lambda seed, backend: None
        self.on_outcome: Callable[[int, str, dict], Any] = lambda seed, backend, outcome: None

    def run(self, seeds: Iterable[int]) -> None:
        for done, seed in enumerate(seeds, 1):
            if done % 100 == 0:
                self.log(f"[{done} programs, last seed {seed}: {len(self.failures)} failures, "
                         f"{sum(self.known.values())} of known classes]")
            program = self.generate(seed)
            try:
                compile(program.source, "<generated>", "exec")
            except SyntaxError as error:  # a generator bug: say so, and go on with the campaign
                self.log(f"seed {seed}: the generated program does not compile ({error}); skipped")
                self.skipped += 1
                for backend in self.backends:
                    self.on_outcome(seed, backend, {"outcome": "skipped"})
                continue
            for backend in self.backends:
                self.on_start(seed, backend)
                skipped = self.skipped
                failure = self.check(program, backend, seed)
                self.programs[backend] += 1
                outcome: dict = {"outcome": "skipped" if self.skipped > skipped else "ok"}
                if failure is not None:
                    known = self.record(failure, program.arguments)
                    outcome = {"outcome": "known", "known": known} if known else {
                        "outcome": "failure", "what": failure.what, "signature": failure.signature,
                        "report": failure.report()}
                self.on_outcome(seed, backend, outcome)

    def check(self, program: Any, backend: str, seed: int) -> Failure | None:
        try:
            return check_source(program.source, program.arguments, backend, seed)
        except Timeout as error:
            # a plain run that times out is no test; a compiled one that does is a failure
            from fuzz_harness import execute
            try:
                execute(program.source, program.arguments, None, str(seed))
            except Timeout:
                self.skipped += 1
                return None
            return Failure(seed, backend, 0, "timeout", str(error), program.source)

    def record(self, failure: Failure, arguments: Any) -> str | None:
        """Counts a failure; the name of its known class, or None for a new one (logged, minimized)."""
        known = known_class(failure)
        if known is not None:
            self.known[known.name] += 1
            return known.name
        key = (failure.backend, failure.signature)
        small = None
        if self.minimize and key not in self.kinds:
            small = minimize(failure, arguments, self.minimize_seconds)
        self.kinds.add(key)
        self.failures.append((failure, small))
        self.log(failure.report() + (f"--- minimized ---\n{small}" if small else ""))
        if self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
            name = f"{'' if self.kind == 'numpy' else self.kind + '-'}{failure.backend}-{failure.seed}-{failure.what.replace(' ', '_')}.py"
            text = "# " + failure.report().replace("\n", "\n# ", 2) + "\n" + (small or "")
            (self.out / name).write_text(text)
        return None

    def report(self, seconds: float) -> str:
        lines = [f"{sum(self.programs.values())} program runs in {seconds:.0f} s: "
                 + ", ".join(f"{b} {n}" for b, n in self.programs.items())]
        lines.append(f"failures: {len(self.failures)}"
                     + "".join(f"\n  {b} {s}: {n}" for (b, s), n in Counter(
                         (f.backend, f.signature) for f, _ in self.failures).most_common()))
        if self.known:
            lines.append("known classes owned elsewhere (not counted as failures):"
                         + "".join(f"\n  {n} x {name}" for name, n in self.known.most_common()))
        if self.skipped:
            lines.append(f"skipped (the plain program timed out, or did not compile): {self.skipped}")
        return "\n".join(lines)
