#!/usr/bin/env bash
# `make bench`: measure the simulator on this machine and write the figures into README.md.
set -euo pipefail
ws="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$ws/scripts/env.sh"
"$ws/scripts/build.sh"
cd "$ws"
python bench/bench_sim.py --write-readme "$@"
python bench/honest_encoders.py --write-readme
python bench/bench_dataset.py --write-readme
python bench/bench_policy.py --write-readme
python bench/bench_viewer.py --write-readme
python bench/profile_node.py --write-readme
python bench/bench_peers.py --write-readme
