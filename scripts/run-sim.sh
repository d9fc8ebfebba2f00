#!/usr/bin/env bash
# Bare-machine simulator run (until the bringup launcher lands): the state publisher and the
# simulator node as two processes on this workspace's ROS domain, headless.
# Ctrl-C (or DURATION seconds of sim time) stops both.
#   ROBOT=rover WORLD=room SEED=0 RTF=1.0 DURATION=0 scripts/run-sim.sh
set -euo pipefail
ws="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$ws/scripts/env.sh"
robot="${ROBOT:-rover}"
lib="$ws/install/robotsim_sim/lib/robotsim_sim"
echo "[robotsim] ROS_DOMAIN_ID=$ROS_DOMAIN_ID (discovery: $ROS_AUTOMATIC_DISCOVERY_RANGE); robot $robot, world ${WORLD:-room}"
"$lib/state_publisher" --ros-args -p "robot:=$robot" -p use_sim_time:=true > >(sed -u 's/^/[state_publisher] /') 2>&1 &
publisher=$!
cleanup() { kill -INT "$publisher" 2>/dev/null || true; wait "$publisher" 2>/dev/null || true; }
trap cleanup EXIT
"$lib/sim_node" --ros-args -p "robot:=$robot" -p "world:=${WORLD:-room}" -p "seed:=${SEED:-0}" \
  -p "real_time_factor:=${RTF:-1.0}" -p "duration:=${DURATION:-0.0}" 2>&1 | sed -u 's/^/[sim] /'
