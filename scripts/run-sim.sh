#!/usr/bin/env bash
# `make sim`: the simulator bringup on a bare machine (set-up first if needed), headless, on this
# workspace's ROS domain: sim node + firmware in the loop + motor bridge + state publisher + the demo
# driver (a lidar wanderer), with a live summary and a run report PNG at the end.
# Ctrl-C (or DURATION seconds of sim time) stops everything. Knobs (all optional):
#   ROBOT=rover WORLD=room FLEET= SEED=0 RTF=1.0 DURATION=0 FIRMWARE=auto DEMO=1 REPORT=run_report.png
#   VIEW=1 (the live browser view on http://127.0.0.1:8080/, its URL printed; VIEW=0 turns it off)
#   DRIVER=wander|expert|policy (instead of DEMO) POLICY=file.onnx (default: the shipped rover policy) GOAL=x,y
#   DEMO=pick: the pick-and-place demo (world pick unless WORLD= is given; the cube at placement SEED);
#     it ends when the cube is placed (exit status 0) or the attempt failed (1)
# or any launch argument: scripts/run-sim.sh record:=true namespace:=robot1
set -euo pipefail
ws="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$ws/scripts/env.sh"
flag() { case "$1" in 1|true) echo true ;; 0|false) echo false ;; *) echo "$1" ;; esac; }
if [[ "${DEMO:-}" == pick ]]; then DRIVER=pick; DEMO=; default_world=pick; else default_world=room; fi
args=(robot:="${ROBOT:-rover}" world:="${WORLD:-$default_world}" seed:="${SEED:-0}" real_time_factor:="${RTF:-1.0}"
      duration:="${DURATION:-0}" firmware:="$(flag "${FIRMWARE:-auto}")" report:="${REPORT:-$ws/run_report.png}"
      view:="$(flag "${VIEW:-1}")")
if [[ -n "${DRIVER:-}" ]]; then
  args+=(driver:="$DRIVER")
  # A goal across the room that needs a way around the crate (x, y in odom = the room's spawn frame).
  [[ "$DRIVER" == wander || "$DRIVER" == pick ]] || args+=(goal:="${GOAL:-2.3,1.7}")
  [[ "$DRIVER" == policy ]] && args+=(policy:="${POLICY:-$ws/config/policies/rover_goal_reaching.onnx}")
else
  args+=(demo:="$(flag "${DEMO:-1}")")
fi
if [[ -n "${FLEET:-}" ]]; then args+=(fleet:="$FLEET"); fi
exec robotsim launch sim "${args[@]}" "$@"
