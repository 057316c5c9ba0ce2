#!/bin/bash
# Set-up on a lent GPU machine, which has no package registry: the carried wheels (.whl/: bytecode),
# then the project installed editable without build isolation; then runs "$@" (the caller's command).
set -e
cd "$(dirname "$0")/.."
if ! python3 -c "import dynamo._C" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
    python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/tmp/install.log 2>&1 \
        || { cat /tmp/install.log; exit 1; }
fi
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
"$@"
