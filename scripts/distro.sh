# The ROS 2 distribution of a bare-machine workspace, in one place (sourced by env.sh and setup.sh).
#   ROBOTSIM_DISTRO=kilted (the default) or jazzy. Each distro has its own venv and colcon trees, side by side:
#   kilted: .venv, build/, install/, log/       jazzy: .venv-jazzy, build-jazzy/, install-jazzy/, log-jazzy/
# (the PyPI wheels of both install under the same names, so they cannot share a venv).
ROBOTSIM_DISTRO="${ROBOTSIM_DISTRO:-kilted}"
case "$ROBOTSIM_DISTRO" in
  kilted) _robotsim_suffix= ;;
  jazzy) _robotsim_suffix=-jazzy ;;
  *) printf 'robotsim: ROBOTSIM_DISTRO=%s: expected kilted or jazzy (the ROS 2 wheels on PyPI)\n' "$ROBOTSIM_DISTRO" >&2
     return 2 2>/dev/null || exit 2 ;;
esac
export ROBOTSIM_DISTRO
export ROBOTSIM_VENV="$ROBOTSIM_WS/.venv$_robotsim_suffix"
export ROBOTSIM_BUILD="$ROBOTSIM_WS/build$_robotsim_suffix"
export ROBOTSIM_INSTALL="$ROBOTSIM_WS/install$_robotsim_suffix"
export ROBOTSIM_LOG="$ROBOTSIM_WS/log$_robotsim_suffix"
# The distro's ROS pins: Kilted's are the ros- lines of requirements/bare.txt, Jazzy's requirements/ros-jazzy.txt.
export ROBOTSIM_ROS_REQUIREMENTS="$ROBOTSIM_WS/requirements/${_robotsim_suffix:+ros-jazzy.txt}"
export ROBOTSIM_CONSTRAINTS="$ROBOTSIM_WS/requirements/constraints$_robotsim_suffix.txt"
unset _robotsim_suffix
