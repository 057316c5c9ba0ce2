"""Long fuzzing campaigns in niced worker processes: seeds in chunks, a watchdog for programs that never
finish (reported only when the plain program finishes), and a journal of the seeds each backend ran."""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

HERE = Path(__file__).resolve().parent
RUN = HERE / "run.py"
CHUNK = 200            # seeds per worker process: imports (~2 s) are paid once per chunk
STUCK_SECONDS = 120    # no word from a worker for this long: the program it runs is killed


@dataclass
class Chunk:
    first: int
    last: int                                  # inclusive
    started: float = field(default_factory=time.monotonic)
    results: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    failures: list[dict] = field(default_factory=list)
    known: list[dict] = field(default_factory=list)   # failures of a class of fuzz_known.py
    done: set[tuple[int, str]] = field(default_factory=set)


class Worker:
    """One `run.py --worker` process over the seeds [first, chunk.last] of a chunk."""

    def __init__(self, chunk: Chunk, first: int, backends: list[str], kind: str) -> None:
        self.chunk = chunk
        command = ["nice", "-n", "10", sys.executable, str(RUN), "--worker", "--kind", kind, "--seed", str(first),
                   "--count", str(chunk.last - first + 1)] + [a for b in backends for a in ("--backend", b)]
        # its stderr is kept aside: when the worker dies, the journal says how (seed 1046200 died
        # with nothing to tell, and did not die again when rerun)
        self.stderr = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
                                        start_new_session=True)
        self.current: tuple[int, str] | None = None
        self.heard = time.monotonic()

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)   # its own session: the worker and nothing else
        except ProcessLookupError:
            pass
        self.process.wait()
        self.stderr.close()

    def death(self) -> str:
        """How the process ended, and the end of what it wrote to stderr."""
        self.process.wait()
        self.stderr.seek(0)
        tail = self.stderr.read()[-2000:]
        code = self.process.returncode
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        return f"{how}; stderr ends:\n{tail}" if tail.strip() else how


def covered(journal: Path) -> dict[str, set[int]]:
    """Seeds each backend has run, from the journal's finished chunks."""
    seeds: dict[str, set[int]] = defaultdict(set)
    if journal.exists():
        for line in journal.read_text().splitlines():
            entry = json.loads(line)
            for backend in entry["results"]:
                seeds[backend].update(range(entry["first"], entry["last"] + 1))
    return seeds


def summary(journals: list[Path]) -> str:
    """Programs, failures and known-class failures per backend over the journals' chunks."""
    seeds: dict[str, set[int]] = defaultdict(set)
    totals: dict[str, Counter] = defaultdict(Counter)
    failures: list[str] = []
    known: Counter = Counter()
    for journal in journals:
        for line in journal.read_text().splitlines():
            entry = json.loads(line)
            kind = f" ({entry['kind']} programs)" if "kind" in entry else ""   # the kinds counted apart
            for backend, counts in entry["results"].items():
                seeds[backend + kind].update(range(entry["first"], entry["last"] + 1))
                totals[backend + kind].update(counts)
            failures += [f"  {f['backend']} seed {f['seed']}: {f['signature']}" for f in entry["failures"]]
            known.update((k["backend"], k["class"]) for k in entry.get("known", []))  # recorded since 1030000
    lines = [f"{backend}: {len(seeds[backend])} programs ({', '.join(f'{k} {v}' for k, v in sorted(totals[backend].items()))})"
             for backend in sorted(seeds)]
    lines += [f"known, by class (journals that name them): {backend}: {n} x {name}"
              for (backend, name), n in sorted(known.items())]
    return "\n".join(lines + ([f"failures: {len(failures)}"] + failures if failures else ["failures: 0"]))


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True,
                              check=False).stdout.strip()
    except OSError:
        return ""


def plain_finishes(seed: int, seconds: float, kind: str) -> bool:
    """Whether the plain program of `seed` finishes its three calls within `seconds` (own process). The
    harness's own time limit ends a plain call that runs on with Timeout, and the process with an error:
    that is no finish (fuzz seed 2055306 extends the list it iterates, and was counted a failure)."""
    try:
        done = subprocess.run(["nice", "-n", "10", sys.executable, str(RUN), "--plain-only", "--kind", kind, "--seed", str(seed)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=seconds, check=False)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def run_parallel(backends: list[str], seeds: range, *, workers: int, journal: Path, out: Path | None,
                 log: Callable[[str], Any], kind: str = "numpy") -> Counter:
    """Runs every seed not yet in `journal` on `backends`; appends one journal line per finished chunk."""
    journal.parent.mkdir(parents=True, exist_ok=True)
    done = covered(journal)
    chunks = [Chunk(first, min(first + CHUNK, seeds.stop) - 1) for first in range(seeds.start, seeds.stop, CHUNK)]
    chunks = [c for c in chunks if not all(set(range(c.first, c.last + 1)) <= done[b] for b in backends)]
    log(f"{len(chunks)} chunks of up to {CHUNK} seeds to run on {', '.join(backends)} ({workers} workers)")
    selector = selectors.DefaultSelector()
    running: list[Worker] = []
    totals: Counter = Counter()
    commit = _commit()

    def start(chunk: Chunk, first: int) -> None:
        worker = Worker(chunk, first, backends, kind)
        running.append(worker)
        selector.register(worker.process.stdout, selectors.EVENT_READ, worker)  # type: ignore[arg-type]

    def stop(worker: Worker) -> None:
        selector.unregister(worker.process.stdout)  # type: ignore[arg-type]
        worker.kill()
        running.remove(worker)

    def outcome(chunk: Chunk, seed: int, backend: str, result: dict) -> None:
        chunk.done.add((seed, backend))
        chunk.results[backend][result["outcome"]] += 1
        totals[result["outcome"]] += 1
        if result["outcome"] == "known":
            chunk.known.append({"seed": seed, "backend": backend, "class": result.get("known", "")})
        if result["outcome"] == "failure":
            chunk.failures.append({"seed": seed, "backend": backend, "signature": result["signature"]}
                                  | ({"detail": result["report"][-600:]} if result.get("what") == "crash" else {}))
            log(result.get("report", f"seed {seed}, backend {backend}: {result['signature']}"))
            if out is not None:
                out.mkdir(parents=True, exist_ok=True)
                (out / f"{backend}-{seed}-{result['what'].replace(' ', '_')}.txt").write_text(result.get("report", ""))

    def finish(chunk: Chunk) -> None:
        entry = {"first": chunk.first, "last": chunk.last, "commit": commit,
                 "seconds": round(time.monotonic() - chunk.started),
                 "results": {b: dict(chunk.results[b]) for b in backends}, "failures": chunk.failures,
                 "known": chunk.known} | ({} if kind == "numpy" else {"kind": kind})
        with journal.open("a") as handle:
            handle.write(json.dumps(entry) + "\n")
        log(f"[seeds {chunk.first}..{chunk.last} done in {entry['seconds']} s: {dict(totals)}]")

    def skip_rest(chunk: Chunk, seed: int, backend: str) -> None:
        # the restarted worker begins at the next seed: the backends after this one did not run it
        for other in backends[backends.index(backend) + 1:]:
            outcome(chunk, seed, other, {"outcome": "skipped"})

    def resume_after(worker: Worker, seed: int) -> None:
        if seed < worker.chunk.last:
            start(worker.chunk, seed + 1)
        else:
            finish(worker.chunk)

    pending = list(chunks)
    while pending or running:
        while pending and len(running) < workers:
            chunk = pending.pop(0)
            start(chunk, chunk.first)
        for key, _ in selector.select(timeout=5):
            worker = key.data
            line = worker.process.stdout.readline()
            worker.heard = time.monotonic()
            if not line:   # the worker ended: its chunk is finished, or it died inside a program
                current = worker.current
                death = worker.death()
                stop(worker)
                if current is None or current in worker.chunk.done:
                    finish(worker.chunk)
                else:
                    outcome(worker.chunk, current[0], current[1],
                            {"outcome": "failure", "what": "crash", "signature": "worker process died",
                             "report": f"seed {current[0]}, backend {current[1]}: worker process died ({death})"})
                    skip_rest(worker.chunk, *current)
                    resume_after(worker, current[0])
                continue
            try:
                message = json.loads(line)
            except json.JSONDecodeError:  # not the protocol: something the worker's process printed
                log(f"[worker output: {line.rstrip()[:200]}]")
                continue
            if "start" in message:
                worker.current = (message["start"], message["backend"])
            else:
                outcome(worker.chunk, message["seed"], message["backend"], message)
        for worker in list(running):
            if time.monotonic() - worker.heard > STUCK_SECONDS and worker.current is not None:
                seed, backend = worker.current
                stop(worker)
                if plain_finishes(seed, STUCK_SECONDS, kind):
                    outcome(worker.chunk, seed, backend, {"outcome": "failure", "what": "timeout",
                                                          "signature": f"timeout (compiled ran past {STUCK_SECONDS} s)"})
                else:   # the program itself does not finish: no test
                    outcome(worker.chunk, seed, backend, {"outcome": "skipped"})
                skip_rest(worker.chunk, seed, backend)
                resume_after(worker, seed)
    return totals


def worker_main(backends: list[str], seeds: range, kind: str = "numpy") -> int:
    """The worker side: one JSON line before and after each (seed, backend) check, on the real stdout."""
    import fuzz_campaign as campaign

    channel: TextIO = os.fdopen(os.dup(1), "w", buffering=1)
    # nothing but the protocol reaches the parent: Python's prints, C code's and child processes'
    # writes to file descriptor 1 go to stderr
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def say(message: dict) -> None:
        channel.write(json.dumps(message) + "\n")

    runner = campaign.Campaign(backends, log=None, kind=kind)
    runner.on_start = lambda seed, backend: say({"start": seed, "backend": backend})
    runner.on_outcome = lambda seed, backend, result: say({"seed": seed, "backend": backend, **result})
    runner.run(seeds)
    return 0
