#!/usr/bin/env bash
# One-time (and idempotent) set-up of a bare machine for robotsim: Debian packages,
# the workspace virtual environment with pinned ROS 2 wheels (Kilted, or Jazzy with ROBOTSIM_DISTRO=jazzy),
# and a colcon build.
# A rerun with nothing changed returns in well under 10 s (stamp files below).
#
# Usage: scripts/setup.sh            set up and build
#        ROBOTSIM_SKIP_APT=1 ...     do not touch Debian packages (they must already be there)
#        ROBOTSIM_ROS2_WHEELS=DIR ...
#                                    also install the real launch/launch_ros/ros2cli wheels found in DIR
#                                    (requirements/ros2_python.txt; not on PyPI: see the README)
#        ROBOTSIM_DISTRO=jazzy ...   ROS 2 Jazzy instead of Kilted, in .venv-jazzy and build-/install-/log-jazzy
#                                    (scripts/distro.sh)
#        ROBOTSIM_TEST_DEPS=1 ...    also install the test-only packages of requirements/test.txt
#                                    (Pinocchio, example-robot-data, Playwright; `make test` sets it) and
#                                    the Debian packages of requirements/debian-test.txt (chromium)
set -euo pipefail

ws="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROBOTSIM_WS="$ws"
# shellcheck disable=SC1091
source "$ws/scripts/distro.sh"
venv="$ROBOTSIM_VENV"
constraints="$ROBOTSIM_CONSTRAINTS"
log() { printf '[robotsim setup] %s\n' "$*" >&2; }
die() { printf '[robotsim setup] error: %s\n' "$*" >&2; exit 2; }

# ---------------------------------------------------------------- Debian packages
# What the bare-machine mode needs from the OS: a C toolchain and CMake >= 3.24 for colcon
# (interface packages, firmware host build), EGL and OSMesa for MuJoCo's offscreen CPU
# rendering, the Arm cross compiler for the firmware's MCU build, venv for Python.
mapfile -t debian_packages < <(grep -v '^#' "$ws/requirements/debian.txt" | grep -v '^$')
# Test-only ones (a headless browser) with ROBOTSIM_TEST_DEPS=1; a comment may follow a name.
if [[ "${ROBOTSIM_TEST_DEPS:-0}" == 1 ]]; then
  mapfile -t -O "${#debian_packages[@]}" debian_packages \
    < <(grep -v '^#' "$ws/requirements/debian-test.txt" | sed 's/#.*//; s/[[:space:]]*$//' | grep -v '^$')
fi

missing_debian_packages() {
  local pkg
  for pkg in "${debian_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

if [[ "${ROBOTSIM_SKIP_APT:-0}" != 1 ]]; then
  if ! command -v dpkg-query >/dev/null; then
    log "not a Debian/Ubuntu system: install by hand the equivalents of: ${debian_packages[*]}"
  else
    mapfile -t missing < <(missing_debian_packages)
    if ((${#missing[@]})); then
      if [[ $(id -u) -ne 0 ]] && ! sudo -n true 2>/dev/null; then
        die "missing Debian packages: ${missing[*]}
  Not root and no password-less sudo, so I cannot install them. Run:
    sudo apt-get update && sudo apt-get install -y ${missing[*]}
  then run this command again."
      fi
      sudo_cmd=(); [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo -n)
      log "installing Debian packages: ${missing[*]}"
      "${sudo_cmd[@]}" apt-get update -qq
      DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
  fi
fi

cmake_version=$(cmake --version 2>/dev/null | head -1 | awk '{print $3}')
[[ -n "$cmake_version" ]] || die "cmake not found (needed >= 3.24 for CMAKE_PROJECT_TOP_LEVEL_INCLUDES)"
if ! printf '3.24\n%s\n' "$cmake_version" | sort -V -C; then
  die "cmake $cmake_version is too old: need >= 3.24 (CMAKE_PROJECT_TOP_LEVEL_INCLUDES repairs the ROS wheels' CMake files)"
fi

# ---------------------------------------------------------------- Python venv
python_bin="${ROBOTSIM_PYTHON:-python3}"
command -v "$python_bin" >/dev/null || die "$python_bin not found; set ROBOTSIM_PYTHON to a Python 3.10-3.13 interpreter"
"$python_bin" -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] <= (3, 13)))' \
  || die "$("$python_bin" --version 2>&1) is not supported: the ROS 2 $ROBOTSIM_DISTRO wheels exist for Python 3.10-3.13 (set ROBOTSIM_PYTHON)"

stamp_inputs=("$ws/requirements/bare.txt" "$constraints" "$ws/requirements/debian.txt" "$ws/scripts/setup.sh"
              "$ws/scripts/distro.sh")
# The distro's ROS pins: Kilted's are bare.txt's ros- lines; another distro's replace them (its own file).
bare_requirements=(-r "$ws/requirements/bare.txt")
if [[ "$ROBOTSIM_DISTRO" != kilted ]]; then
  stamp_inputs+=("$ROBOTSIM_ROS_REQUIREMENTS")
  mkdir -p "$venv"
  grep -v '^ros-' "$ws/requirements/bare.txt" > "$venv/.robotsim-bare-without-ros.txt"
  bare_requirements=(-r "$venv/.robotsim-bare-without-ros.txt" -r "$ROBOTSIM_ROS_REQUIREMENTS")
fi
ros2_wheels="${ROBOTSIM_ROS2_WHEELS:-}"
if [[ -n "$ros2_wheels" ]]; then
  [[ -d "$ros2_wheels" ]] || die "ROBOTSIM_ROS2_WHEELS=$ros2_wheels: not a folder (expected a folder of launch/ros2cli wheels)"
  ros2_wheels="$(cd "$ros2_wheels" && pwd)"
  stamp_inputs+=("$ws/requirements/ros2_python.txt")
fi
stamp_inputs+=("$ws/requirements/test.txt" "$ws/requirements/train.txt" "$ws/requirements/docs.txt")
test_deps="${ROBOTSIM_TEST_DEPS:-0}"
test_deps_mark=""; [[ "$test_deps" == 1 ]] && test_deps_mark=" test-deps"
want_stamp="$("$python_bin" --version 2>&1) $(cat "${stamp_inputs[@]}" | sha256sum | cut -c1-16)${ros2_wheels:+ ros2-wheels}$test_deps_mark"
have_stamp="$(cat "$venv/.robotsim-setup-stamp" 2>/dev/null || true)"
# A venv with the test-only packages serves a set-up that does not ask for them (make sim after make test).
[[ "$test_deps" != 1 && "$have_stamp" == "$want_stamp test-deps" ]] && have_stamp="$want_stamp"

if [[ "$want_stamp" != "$have_stamp" || ! -x "$venv/bin/python" ]]; then
  log "creating the virtual environment in $venv (pinned ROS 2 $ROBOTSIM_DISTRO wheels, MuJoCo, colcon)"
  [[ -x "$venv/bin/python" ]] || "$python_bin" -m venv "$venv"
  # colcon on a full ROS install must never crawl into the venv.
  touch "$venv/COLCON_IGNORE"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${bare_requirements[@]}" -c "$constraints"
  if [[ "$test_deps" == 1 ]]; then
    log "installing the test-only packages (requirements/test.txt)"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check \
      -r "$ws/requirements/test.txt" -c "$constraints"
  fi
  if [[ -n "$ros2_wheels" ]]; then
    log "installing the ROS 2 launch and command-line wheels from $ros2_wheels"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-index \
      --find-links "$ros2_wheels" -r "$ws/requirements/ros2_python.txt" \
      || die "ROBOTSIM_ROS2_WHEELS=$ros2_wheels: cannot install requirements/ros2_python.txt from it (pip's reason above)"
  fi
  echo "$want_stamp" > "$venv/.robotsim-setup-stamp"
  rm -f "$ROBOTSIM_INSTALL/.robotsim-build-stamp"
fi

# ---------------------------------------------------------------- colcon build
"$ws/scripts/build.sh"
