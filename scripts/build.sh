#!/usr/bin/env bash
# colcon build of the workspace in bare-machine mode (no ROS install; ROS 2 wheels in the distro's venv,
# trees per distro: scripts/distro.sh).
# Skips the build when nothing under the package sources changed since the last good one.
set -euo pipefail
ws="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "$ws/scripts/env.sh"
cd "$ws"

# One build at a time per workspace: two test runs (or a test run and `make sim`) started
# together would otherwise write into the same build/ and install/ trees.
mkdir -p "$ROBOTSIM_LOG"
exec 9>"$ROBOTSIM_LOG/.robotsim-build.lock"
flock 9

stamp="$ROBOTSIM_INSTALL/.robotsim-build-stamp"
sources=(src compat cmake launch config colcon.meta scripts/build.sh)
if [[ -f "$stamp" ]] && [[ -z "$(find "${sources[@]}" -newer "$stamp" -print -quit 2>/dev/null)" ]]; then
  exit 0
fi

# Stamp the time the build starts from: a file edited while colcon runs is still newer next time.
mkdir -p "$ROBOTSIM_INSTALL"; touch "$stamp.next"

# A Python package whose set of modules changed (one moved, renamed or deleted) is rebuilt from scratch:
# setuptools copies into build/ and install/ without deleting, so the old module would stay importable
# there and hide every import still naming it.
for setup_py in "$ws"/src/*/setup.py; do
  package="$(basename "$(dirname "$setup_py")")"
  listing="$ROBOTSIM_INSTALL/.robotsim-modules-$package"
  modules="$(cd "$ws/src/$package" && find . -name '*.py' -not -path './build/*' | LC_ALL=C sort)"
  if [[ -f "$listing" && "$(cat "$listing")" != "$modules" ]]; then
    echo "[robotsim build] $package: modules added, moved or removed: clean rebuild of the package" >&2
    rm -rf "${ROBOTSIM_BUILD:?}/$package" "${ROBOTSIM_INSTALL:?}/$package"
  fi
  printf '%s' "$modules" > "$listing"
done
echo "[robotsim build] colcon build, ROS 2 $ROBOTSIM_DISTRO (log: $ROBOTSIM_LOG/latest_build)" >&2
# --paths compat/...: tf2_msgs, composition_interfaces (launch_ros needs it), control_msgs (the arm's
#   FollowJointTrajectory and GripperCommand actions) and ros_gz_interfaces (contact sensors) are not on PyPI;
#   compat/ carries COLCON_IGNORE so a crawl (the default on a full ROS install) skips them, while
#   these explicit paths build them here.
# CMAKE_PROJECT_TOP_LEVEL_INCLUDES: repairs the wheels' hard-coded /opt/python include paths,
#   see cmake/ros_wheels_fixup.cmake.
if ! colcon --log-base "$ROBOTSIM_LOG" build \
      --base-paths src --paths compat/tf2_msgs compat/composition_interfaces compat/control_msgs \
        compat/ros_gz_interfaces \
      --build-base "$ROBOTSIM_BUILD" --install-base "$ROBOTSIM_INSTALL" \
      --event-handlers console_direct- console_stderr- summary+ \
      --cmake-args -DBUILD_TESTING=OFF \
        "-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=$ws/cmake/ros_wheels_fixup.cmake" \
        "-DROBOTSIM_PYTHON_EXECUTABLE=$ROBOTSIM_VENV/bin/python" \
        "-DPython3_EXECUTABLE=$ROBOTSIM_VENV/bin/python" >&2; then
  echo "[robotsim build] colcon build failed; per-package logs under $ROBOTSIM_LOG/latest_build/" >&2
  tail -n 40 "$ROBOTSIM_LOG"/latest_build/*/stdout_stderr.log >&2 || true
  exit 1
fi
mv "$stamp.next" "$stamp"
