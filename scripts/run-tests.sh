#!/usr/bin/env bash
# Run the whole test suite in the bare-machine environment (called by `make test` and .ci/run).
set -euo pipefail
ws="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$ws/scripts/env.sh"
cd "$ws"
"$ws/scripts/build.sh"  # rebuild changed packages so tests run the installed code
set +e
# With no arguments, run everything: the workspace's tests/ and every package's test/ folder (the
# ones `colcon test` runs per package); otherwise pass them through (e.g. a single file, -k).
(( $# )) || set -- tests src/*/test
# The 25 slowest tests are listed at the end, to keep the suite inside its time (docs/development.md).
python -m pytest -p no:cacheprovider --durations=25 --durations-min=10 "$@"
status=$?
set -e
# pytest's 5 means "no test collected": that is a failure of the suite, not a pass.
if [[ $status -eq 5 ]]; then
  echo "run-tests: pytest collected no tests" >&2
  exit 1
fi
exit $status
