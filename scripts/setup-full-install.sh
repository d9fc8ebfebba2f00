#!/usr/bin/env bash
# Set-up on a machine or image with a full ROS 2 install (Humble, Jazzy, Kilted; the Jetson), the
# counterpart of scripts/setup.sh for bare machines: the same Debian package list
# (requirements/debian.txt), rosdep for the packages' ROS dependencies, the few pip packages ROS
# does not package (requirements/full_install.txt), then a plain colcon build.
#   source /opt/ros/$ROS_DISTRO/setup.bash && scripts/setup-full-install.sh
# Used by docker/desktop.Dockerfile and docker/jetson.Dockerfile. Not exercised on the bare CI machine.
set -euo pipefail
ws="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
die() { printf '[robotsim setup] error: %s\n' "$*" >&2; exit 2; }
[[ -n "${ROS_DISTRO:-}" ]] || die "no ROS environment: source /opt/ros/<distro>/setup.bash first (bare machine: scripts/setup.sh)"
sudo_cmd=(); [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)

mapfile -t debian_packages < <(grep -v '^#' "$ws/requirements/debian.txt" | grep -v '^$' | grep -v python3-venv)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
  "${debian_packages[@]}" python3-pip python3-matplotlib python3-yaml python3-pytest
rosdep update -q || true
# -r: keep going past keys a distro lacks (the driver packages of config/real are per robot).
rosdep install -q -y -r --from-paths "$ws/src" --ignore-src --rosdistro "$ROS_DISTRO" || true

pip_flags=()
python3 -m pip install --help | grep -q -- --break-system-packages && pip_flags+=(--break-system-packages)
python3 -m pip install -q "${pip_flags[@]}" -r "$ws/requirements/full_install.txt"

# tf2_msgs and friends come from the ROS install: compat/ (the bare-machine stand-ins) stays out.
cd "$ws" && colcon build --base-paths src
