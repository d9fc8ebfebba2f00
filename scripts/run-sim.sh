#!/usr/bin/env bash
# `make sim`: the simulator bringup on a bare machine (set-up first if needed), headless, on this
# workspace's ROS domain: sim node + firmware in the loop + motor bridge + state publisher + the demo
# driver (a lidar wanderer), with a live summary and a run report PNG at the end.
# Ctrl-C (or DURATION seconds of sim time) stops everything. Knobs (all optional):
#   ROBOT=rover WORLD=room FLEET= SEED=0 RTF=1.0 DURATION=0 FIRMWARE=auto DEMO=1 REPORT=run_report.png
# or any launch argument: scripts/run-sim.sh record:=true namespace:=robot1
set -euo pipefail
ws="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$ws/scripts/env.sh"
flag() { case "$1" in 1|true) echo true ;; 0|false) echo false ;; *) echo "$1" ;; esac; }
args=(robot:="${ROBOT:-rover}" world:="${WORLD:-room}" seed:="${SEED:-0}" real_time_factor:="${RTF:-1.0}"
      duration:="${DURATION:-0}" firmware:="$(flag "${FIRMWARE:-auto}")" demo:="$(flag "${DEMO:-1}")"
      report:="${REPORT:-$ws/run_report.png}")
if [[ -n "${FLEET:-}" ]]; then args+=(fleet:="$FLEET"); fi
exec robotsim launch sim "${args[@]}" "$@"
