#!/usr/bin/env bash
# Bare-machine simulator run (until the bringup launcher lands), headless, on this workspace's
# ROS domain: the simulator node, the state publisher, the demo driver (a lidar wanderer, DEMO=0
# to drive yourself) and, with firmware in the loop (the default for differential robots), the
# motor bridge on the simulator's serial link.
# Ctrl-C (or DURATION seconds of sim time) stops everything.
#   ROBOT=rover WORLD=room SEED=0 RTF=1.0 DURATION=0 FIRMWARE=1 DEMO=1 scripts/run-sim.sh
set -euo pipefail
ws="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$ws/scripts/env.sh"
robot="${ROBOT:-rover}"
firmware="${FIRMWARE:-1}"
if [[ "$robot" == racer ]]; then firmware=0; fi  # Ackermann: the firmware drives differential bases only
link="${TMPDIR:-/tmp}/robotsim-$(id -u)/ttyMCU-$ROS_DOMAIN_ID"
sim_lib="$ws/install/robotsim_sim/lib/robotsim_sim"
children=()
cleanup() {
  for pid in "${children[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  for pid in "${children[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
echo "[robotsim] ROS_DOMAIN_ID=$ROS_DOMAIN_ID (discovery: $ROS_AUTOMATIC_DISCOVERY_RANGE); robot $robot, world ${WORLD:-room}," \
  "$([[ $firmware == 1 ]] && echo "firmware in the loop on $link" || echo "built-in base controller")"
"$sim_lib/state_publisher" --ros-args -p "robot:=$robot" -p use_sim_time:=true \
  > >(sed -u 's/^/[state_publisher] /') 2>&1 &
children+=($!)
if [[ "${DEMO:-1}" == 1 ]]; then
  "$ws/install/robotsim_learning/lib/robotsim_learning/wander" --ros-args -p use_sim_time:=true \
    > >(sed -u 's/^/[wander] /') 2>&1 &
  children+=($!)
fi
if [[ $firmware == 1 ]]; then
  "$ws/install/robotsim_firmware/lib/robotsim_firmware/motor_bridge" --ros-args -p "robot:=$robot" \
    -p "device:=$link" -p use_sim_time:=true -p reconnect_period:=0.2 > >(sed -u 's/^/[motor_bridge] /') 2>&1 &
  children+=($!)
fi
"$sim_lib/sim_node" --ros-args -p "robot:=$robot" -p "world:=${WORLD:-room}" -p "seed:=${SEED:-0}" \
  -p "real_time_factor:=${RTF:-1.0}" -p "duration:=${DURATION:-0.0}" -p "firmware:=$([[ $firmware == 1 ]] && echo true || echo false)" \
  -p "serial_link:=$link" 2>&1 | sed -u 's/^/[sim] /'
