# Source this file (bash) to use a bare-machine robotsim workspace:
#   source scripts/env.sh
# It puts the workspace venv and install/ on the paths and confines ROS discovery to
# this machine. The make targets and tests use it; on a full ROS install, source
# /opt/ros/<distro>/setup.bash and install/setup.bash instead.

ROBOTSIM_WS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROBOTSIM_WS
# shellcheck disable=SC1091
source "$ROBOTSIM_WS/scripts/distro.sh" || return 2  # ROBOTSIM_DISTRO -> ROBOTSIM_VENV, ROBOTSIM_INSTALL, ...
_robotsim_venv="$ROBOTSIM_VENV"

export VIRTUAL_ENV="$_robotsim_venv"
case ":$PATH:" in *":$_robotsim_venv/bin:"*) ;; *) export PATH="$_robotsim_venv/bin:$PATH" ;; esac

# The ROS wheels install their ament index and CMake config files under the venv prefix
# (.venv/share/...). ament_index_python (rclpy's type support lookup) and CMake's
# find_package (colcon building robotsim_msgs) only search prefixes listed here.
case ":${AMENT_PREFIX_PATH:-}:" in *":$_robotsim_venv:"*) ;; *) export AMENT_PREFIX_PATH="$_robotsim_venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}" ;; esac
case ":${CMAKE_PREFIX_PATH:-}:" in *":$_robotsim_venv:"*) ;; *) export CMAKE_PREFIX_PATH="$_robotsim_venv${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}" ;; esac

if [[ -f "$ROBOTSIM_INSTALL/local_setup.bash" ]]; then
  # colcon's script prepends every built package (PYTHONPATH, AMENT_PREFIX_PATH, PATH, ...).
  # shellcheck disable=SC1091
  # colcon's scripts read unset variables: lift `set -u` around them, restore it after.
  case $- in *u*) _robotsim_nounset=1; set +u ;; *) _robotsim_nounset= ;; esac
  COLCON_CURRENT_PREFIX="$ROBOTSIM_INSTALL" source "$ROBOTSIM_INSTALL/local_setup.bash"
  [[ -n "$_robotsim_nounset" ]] && set -u
  unset _robotsim_nounset
fi
# ament_python puts console scripts in lib/<package>/ (for `ros2 run`); the robotsim CLI lives in the
# bringup package's.
case ":$PATH:" in *":$ROBOTSIM_INSTALL/robotsim/lib/robotsim:"*) ;;
  *) export PATH="$ROBOTSIM_INSTALL/robotsim/lib/robotsim:$PATH" ;; esac

# Network rule: discovery never leaves this machine.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST   # Jazzy and newer
if [[ "$ROBOTSIM_DISTRO" == jazzy ]]; then
  # Jazzy still reads the deprecated ROS_LOCALHOST_ONLY: set, it warns twice a process and overrides the range.
  unset ROS_LOCALHOST_ONLY
  # Fast DDS 2.14 (Jazzy) stalls reliable /clock between two processes for 2-3 s in synchronous publication
  # mode (measured: the sim node's /clock test failed 5 runs of 10; none of 16 asynchronous).
  export RMW_FASTRTPS_PUBLICATION_MODE="${RMW_FASTRTPS_PUBLICATION_MODE:-ASYNCHRONOUS}"
else
  export ROS_LOCALHOST_ONLY=1                    # Humble (Kilted ignores it)
fi
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
# Larger shared-memory segment (no best-effort image drops between processes), UDP on loopback only.
export FASTDDS_DEFAULT_PROFILES_FILE="${FASTDDS_DEFAULT_PROFILES_FILE:-$ROBOTSIM_WS/config/dds/fastdds_localhost.xml}"
if [[ "$ROBOTSIM_DISTRO" == jazzy ]]; then
  # Jazzy's Fast DDS 2.14 reads its profile from FASTRTPS_DEFAULT_PROFILES_FILE, in the 2.x dialect.
  export FASTRTPS_DEFAULT_PROFILES_FILE="${FASTRTPS_DEFAULT_PROFILES_FILE:-$ROBOTSIM_WS/config/dds/fastdds_localhost_v2.xml}"
fi
# One domain per workspace by default, so a second clone (CI, a colleague's test run)
# does not see this one; tests pick their own per-run domain on top of this.
if [[ -z "${ROS_DOMAIN_ID:-}" ]]; then
  ROS_DOMAIN_ID=$(( $(printf '%s' "$ROBOTSIM_WS $ROBOTSIM_DISTRO" | cksum | cut -d' ' -f1) % 100 + 1 ))
  export ROS_DOMAIN_ID
fi
# MuJoCo renders offscreen on the CPU: EGL (Mesa llvmpipe) preferred; robotsim falls back to
# OSMesa when EGL cannot start (robotsim_sensors/gl_backend.py). MuJoCo sets PYOPENGL_PLATFORM itself.
export MUJOCO_GL="${MUJOCO_GL:-egl}"
unset _robotsim_venv
