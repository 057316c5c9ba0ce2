"""Self-contained set-up for the README commands: a per-Python virtualenv inside the repo.

`ensure_venv()` re-executes the calling script inside `.venv/<python-version>/`, creating it
and installing the project (editable, with the extras asked for) when the project files changed.
"""
import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _fingerprint(extras):
    digest = hashlib.sha256(",".join(sorted(extras)).encode())
    for path in sorted([ROOT / "pyproject.toml", ROOT / "setup.py", *(ROOT / "csrc").glob("*.[ch]")]):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def ensure_venv(extras=("test",)):
    tag = "py%d.%d" % sys.version_info[:2]
    env_dir = ROOT / ".venv" / tag
    python = env_dir / "bin" / "python"
    stamp = env_dir / ".installed"
    wanted = _fingerprint(extras)
    if not python.exists():
        print(f"[setup] creating {env_dir.relative_to(ROOT)}", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    if not stamp.exists() or stamp.read_text() != wanted:
        print(f"[setup] installing the project into {env_dir.relative_to(ROOT)}", flush=True)
        pip = [str(python), "-m", "pip", "--disable-pip-version-check", "-q"]
        spec = ".[%s]" % ",".join(extras) if extras else "."
        log = env_dir / "install.log"
        with open(log, "w") as out:
            for args in (["install", "--upgrade", "pip"], ["install", "-e", spec]):
                if subprocess.call(pip + args, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT) != 0:
                    sys.stderr.write(log.read_text())
                    sys.exit(f"[setup] pip {' '.join(args)} failed (log above, also in {log})")
        stamp.write_text(wanted)
    if Path(sys.prefix).resolve() != env_dir.resolve():
        script = os.path.abspath(sys.argv[0])
        os.execv(str(python), [str(python), script, *sys.argv[1:]])
