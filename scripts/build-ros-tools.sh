#!/usr/bin/env bash
# Builds the real ROS 2 C++ tools from upstream sources against a bare machine's wheel-installed ROS 2 core
# (the distro's venv), into a cached prefix OUTSIDE the repository:
#   robot_state_publisher (+ urdf, kdl_parser, tf2, tf2_ros with static_transform_publisher / tf2_echo,
#     rclcpp, rclcpp_action, rclcpp_components, class_loader, pluginlib, message_filters, ...)
#   rosbag2 with the MCAP storage plugin, rosbag2_py and the `ros2 bag` verb (ros2bag). No sqlite3 storage.
#
# Usage:  scripts/build-ros-tools.sh            (the workspace's distro: ROBOTSIM_DISTRO, default kilted as env.sh)
# Env:    ROBOTSIM_DISTRO            kilted (rolling branches of late 2024, + ament_cmake_ros) | jazzy
#         ROBOTSIM_ROS_TOOLS_PREFIX  install prefix   (default $HOME/.cache/robotsim/ros-tools-<distro>)
#         ROBOTSIM_ROS_SOURCES       git mirrors, <owner>+<name>/repo (default /work/.mirror); a repo absent
#                                    there is cloned bare from https://github.com/<owner>/<name> into
#                                    $HOME/.cache/robotsim/git/
#         ROBOTSIM_ROS_TOOLS_JOBS    make -j per package (default 2; colcon builds one package at a time)
# Sources are extracted to <prefix>-src, colcon build/log trees are <prefix>-build and <prefix>-log.
# The result is described in <prefix>/ROBOTSIM_BUILD_INFO.txt (repos, refs, commits, packages, times,
# failures, patches). Re-running with a finished prefix returns at once.
#
# Use (after a successful build), in this order:
#   source scripts/env.sh                                # venv, install, discovery on localhost
#   source "$HOME/.cache/robotsim/ros-tools-kilted/setup_robotsim.bash"  # last: its tf2_msgs is the full one
# (Jazzy: ROBOTSIM_DISTRO=jazzy for all three, and ros-tools-jazzy.)
#   ros2 run robot_state_publisher robot_state_publisher --ros-args -p robot_description:="$(cat x.urdf)"
#   ros2 bag record -s mcap -o /tmp/bag /chatter ; ros2 bag info /tmp/bag ; ros2 bag play /tmp/bag
set -euo pipefail
ws="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
ROBOTSIM_WS="$ws" source "$ws/scripts/distro.sh"   # ROBOTSIM_DISTRO (default kilted) -> ROBOTSIM_VENV
distro="$ROBOTSIM_DISTRO"
cache="$HOME/.cache/robotsim"
prefix="${ROBOTSIM_ROS_TOOLS_PREFIX:-$cache/ros-tools-$distro}"
sources="${ROBOTSIM_ROS_SOURCES:-/work/.mirror}"
src="$prefix-src" build="$prefix-build" logs="$prefix-log"
jobs="${ROBOTSIM_ROS_TOOLS_JOBS:-2}"
info="$prefix/ROBOTSIM_BUILD_INFO.txt"
say() { printf '[ros-tools %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
trap 'say "failed: line $LINENO: $BASH_COMMAND"' ERR

# ---------------------------------------------------------------------------------------------------------
# Ref table: repo (owner/name) | ref | package directories (relative to the repo root) to build.
# Jazzy: the jazzy branch where a repo has one; else the tag whose package.xml version is the one Jazzy
# released (robot_state_publisher 3.3.3, class_loader 2.7.0, pluginlib 5.4.2, kdl_parser 2.11.0,
# tinyxml2_vendor 0.9.1); urdf: 2.5.2, the newest ref in the mirror (Jazzy ships 2.10.x).
# Kilted: the rolling branches (late-2024 snapshots); urdf has no rolling branch in the mirror.
refs_jazzy=(
  "ament/ament_cmake|jazzy|ament_cmake_vendor_package"
  "ros2/eigen3_cmake_module|jazzy|."
  "ros2/rcl_interfaces|jazzy|statistics_msgs composition_interfaces"
  "ros2/console_bridge_vendor|jazzy|."
  "ros2/tinyxml2_vendor|0.9.1|."
  "ros2/orocos_kdl_vendor|jazzy|orocos_kdl_vendor"
  "ros2/yaml_cpp_vendor|jazzy|."
  "ros2/pybind11_vendor|jazzy|."
  "ros-tooling/libstatistics_collector|jazzy|."
  "ros2/rclcpp|jazzy|rclcpp rclcpp_action rclcpp_components"
  "ros/class_loader|2.7.0|."
  "ros/pluginlib|5.4.2|pluginlib"
  "ros2/message_filters|jazzy|."
  "ros2/geometry2|jazzy|tf2_msgs tf2 tf2_ros"
  "ros2/urdf|2.5.2|urdf urdf_parser_plugin"
  "ros/kdl_parser|2.11.0|kdl_parser"
  "ros/robot_state_publisher|3.3.3|."
  "ros-tooling/keyboard_handler|jazzy|keyboard_handler"
  "ros2/rosbag2|jazzy|liblz4_vendor zstd_vendor mcap_vendor shared_queues_vendor rosbag2_storage rosbag2_storage_mcap rosbag2_cpp rosbag2_compression rosbag2_interfaces rosbag2_transport rosbag2_py ros2bag"
)
refs_kilted=()
for _row in "${refs_jazzy[@]}"; do
  IFS='|' read -r _repo _ref _pkgs <<<"$_row"
  case "$_repo" in
    ros2/urdf) _ref=ros2 ;;
    ros-tooling/libstatistics_collector|ros-tooling/keyboard_handler|ros/*|ros2/*|ament/*) _ref=rolling ;;
  esac
  refs_kilted+=("$_repo|$_ref|$_pkgs")
  # The Kilted wheels ship ament_cmake_ros_core only; the 2024 rolling sources still find_package(ament_cmake_ros),
  # whose extras find_package ament_cmake_gtest/gmock/pytest (not in the wheels either): all CMake-only.
  if [[ "$_repo" == ament/ament_cmake ]]; then
    refs_kilted[-1]+=" ament_cmake_gtest ament_cmake_gmock ament_cmake_pytest"
    refs_kilted+=("ros2/ament_cmake_ros|rolling|ament_cmake_ros")
  fi
done
unset _row _repo _ref _pkgs
# Build groups, in order: colcon --packages-up-to each group's targets, skipping what earlier groups built.
group_names=(core robot_state_publisher rosbag2)
group_core="tf2_ros pluginlib"
group_robot_state_publisher="robot_state_publisher"
group_rosbag2="ros2bag rosbag2_py rosbag2_storage_mcap"
# Debian packages the vendor packages resolve to (each vendor package then builds nothing).
debs=(git cmake g++ liburdfdom-dev liburdfdom-headers-dev liborocos-kdl-dev libeigen3-dev libtinyxml2-dev
      libconsole-bridge-dev libyaml-cpp-dev libzstd-dev liblz4-dev pybind11-dev)

case "$distro" in
  jazzy) refs=("${refs_jazzy[@]}") ;;
  kilted) refs=("${refs_kilted[@]}"); say "kilted: rolling branches (late 2024) + ament_cmake_ros (not in the Kilted wheels)" ;;
  *) say "ROBOTSIM_DISTRO=$distro: expected jazzy or kilted"; exit 2 ;;
esac
venv="$ROBOTSIM_VENV"
[[ -x "$venv/bin/python" ]] || { say "no venv at $venv (make setup with ROBOTSIM_DISTRO=$distro first)"; exit 2; }

# --- the prefix's environment file (rewritten on every run: not part of the prefix's identity) --------------------
# colcon's local_setup.bash puts the packages on the paths; the wheels' own libraries (venv/lib and the auditwheel
# copies in site-packages/ros_*.libs) go on LD_LIBRARY_PATH ahead of it, in a fixed order, and the wheels'
# ros_wheels_bootstrapper is told they are there. Left to itself, that bootstrapper re-executes every Python process
# with LD_LIBRARY_PATH rebuilt from a set, in an order that changes with the hash seed: install-<distro>'s reduced
# tf2_msgs library then comes before this prefix's full one in some processes, and their tf2_msgs import fails.
write_setup() {
  cat >"$prefix/setup_robotsim.bash" <<EOF
# Generated by robotsim scripts/build-ros-tools.sh. Source it AFTER the venv environment:
#   ROBOTSIM_DISTRO=$distro source $ws/scripts/env.sh; source $prefix/setup_robotsim.bash
# (last, so this prefix's full tf2_msgs wins over install-$distro's reduced one).
case \$- in *u*) _robotsim_nounset=1; set +u ;; *) _robotsim_nounset= ;; esac
COLCON_CURRENT_PREFIX="$prefix" source "$prefix/local_setup.bash"
for _robotsim_d in $venv/lib/python3*/site-packages/ros_*.libs $venv/lib; do
  case ":\${LD_LIBRARY_PATH:-}:" in *":\$_robotsim_d:"*) ;;
    *) LD_LIBRARY_PATH="\$_robotsim_d\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" ;; esac
done
export LD_LIBRARY_PATH
# The wheels' libraries are on the path in this order: ros_wheels_bootstrapper must not reorder it.
export _ROS_WHEELS_BOOTSTRAP_COMPLETE=1
export ROS_DISTRO="\${ROS_DISTRO:-$distro}"   # rosbag2 writes it into metadata.yaml
[[ -n "\$_robotsim_nounset" ]] && set -u
unset _robotsim_d _robotsim_nounset
EOF
}

# Identity of a finished prefix: the ref table, the groups, the patch set and this script's build recipe.
key="$(printf '%s\n' "$distro" "${refs[@]}" "$group_core" "$group_robot_state_publisher" "$group_rosbag2" \
        "$(sed -n '/^# ---8<--- recipe/,$p' "${BASH_SOURCE[0]}")" | sha256sum | cut -c1-16)"
if [[ -f "$prefix/.robotsim-complete" && "$(cat "$prefix/.robotsim-complete")" == "$key" ]]; then
  write_setup; say "up to date: $prefix (key $key; see $info)"; exit 0
fi

mkdir -p "$cache" "$prefix" "$src"
exec 8>"$prefix.lock"
flock -n 8 || { say "another build of $prefix is running; waiting"; flock 8; }
# ---8<--- recipe (everything below is part of the prefix's identity key)
t_start=$(date +%s)
log="$prefix-build.log"; : >"$log"
exec > >(tee -a "$log") 2>&1
say "distro $distro, prefix $prefix, sources $sources, key $key"

# --- Debian packages --------------------------------------------------------------------------------------
missing=()
for d in "${debs[@]}"; do dpkg -s "$d" >/dev/null 2>&1 || missing+=("$d"); done
if ((${#missing[@]})); then
  say "apt-get install -y ${missing[*]}"
  sudo_=""; [[ $(id -u) -eq 0 ]] || sudo_=sudo
  $sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${missing[@]}"
else
  say "Debian packages present: ${debs[*]}"
fi

# --- sources ------------------------------------------------------------------------------------------------
gitdir_of() {  # owner/name -> a git dir holding it (mirror, or a bare clone made here)
  local repo="$1" m="$sources/${1/\//+}/repo"
  if [[ -d "$m" ]]; then [[ -d "$m/.git" ]] && m="$m/.git"; printf '%s' "$m"; return; fi
  local c="$cache/git/${repo/\//+}.git"
  if [[ ! -d "$c" ]]; then
    say "$repo: not in $sources, git clone --bare https://github.com/$repo" >&2
    git clone -q --bare "https://github.com/$repo" "$c" >&2
  fi
  printf '%s' "$c"
}
resolve() {  # gitdir ref -> commit (branch, remote branch or tag)
  local g="$1" r="$2" c
  for c in "refs/heads/$r" "refs/remotes/origin/$r" "refs/tags/$r" "$r"; do
    git --git-dir="$g" rev-parse -q --verify "$c^{commit}" 2>/dev/null && return 0
  done
  return 1
}
extract() {  # gitdir commit dir [path...]: those paths (default: all) of commit's tree in dir, kept while the
  local g="$1" c="$2" d="$3"; shift 3  # commit and paths stay the same (only the package dirs: some mirrors
  local id="$c $*"                     # lack blobs elsewhere, e.g. kdl_parser_py's test files)
  [[ -f "$d/.robotsim-commit" && "$(cat "$d/.robotsim-commit")" == "$id" ]] && return 0
  rm -rf "$d"; mkdir -p "$d"
  git --git-dir="$g" archive "$c" -- "$@" | tar -x -C "$d"
  echo "$id" >"$d/.robotsim-commit"
}

declare -A repo_commit repo_dir
paths=()
repo_lines=()
for row in "${refs[@]}"; do
  IFS='|' read -r repo ref pkgs <<<"$row"
  g="$(gitdir_of "$repo")"
  commit="$(resolve "$g" "$ref")" || { say "$repo: ref $ref not found in $g"; exit 1; }
  d="$src/${repo/\//+}"
  read -ra pkg_list <<<"$pkgs"
  if [[ " $pkgs " == *" . "* ]]; then extract "$g" "$commit" "$d"; else extract "$g" "$commit" "$d" "${pkg_list[@]}"; fi
  repo_commit[$repo]=$commit; repo_dir[$repo]=$d
  repo_lines+=("$(printf '%-38s %-9s %s  (%s)' "$repo" "$ref" "$commit" "$(git --git-dir="$g" log -1 --format=%cs "$commit")")")
  say "source $repo @ $ref = $commit"
  for p in $pkgs; do paths+=("$d/$p"); done
done

# Third-party sources that vendor packages would download at build time, taken from the mirrors instead.
rosbag2_dir="${repo_dir[ros2/rosbag2]}"
upstream() { git --git-dir="$(gitdir_of ros2/rosbag2)" show "${repo_commit[ros2/rosbag2]}:$1"; }  # unpatched
mcap_tag="$(upstream mcap_vendor/CMakeLists.txt | grep -oP 'tags/\Kreleases/cpp/v[0-9.]+(?=\.tar\.gz)')"
g="$(gitdir_of foxglove/mcap)"; mcap_commit="$(resolve "$g" "$mcap_tag")"
mcap_src="$src/foxglove+mcap"; extract "$g" "$mcap_commit" "$mcap_src"
repo_lines+=("$(printf '%-38s %-9s %s  (mcap_vendor FetchContent)' foxglove/mcap "$mcap_tag" "$mcap_commit")")
rwq_ref="$(upstream shared_queues_vendor/CMakeLists.txt | grep -oP 'readerwriterqueue/archive/\K[0-9a-f]{40}')"
g="$(gitdir_of cameron314/readerwriterqueue)"; rwq_commit="$(resolve "$g" "$rwq_ref")"
rwq_tar="$src/readerwriterqueue-$rwq_commit.tar.gz"
[[ -f "$rwq_tar" ]] || git --git-dir="$g" archive --format=tar.gz --prefix="readerwriterqueue-$rwq_commit/" \
  "$rwq_commit" >"$rwq_tar"
repo_lines+=("$(printf '%-38s %-9s %s  (shared_queues_vendor download)' cameron314/readerwriterqueue \
  "${rwq_ref:0:9}" "$rwq_commit")")
say "mcap C++ $mcap_tag = $mcap_commit; readerwriterqueue $rwq_commit"

# --- patches (each applied once per extracted tree; listed in the build info) --------------------------------
patch_lines=()
apply() {  # name dir description; the patch body is the function patch_<name>
  local name="$1" dir="$2" why="$3"
  patch_lines+=("$name: $why")
  [[ -f "$dir/.robotsim-patch-$name" ]] && return 0
  say "patch $name"
  "patch_$name" "$dir"
  touch "$dir/.robotsim-patch-$name"
}
patch_yaml_cpp_0_7() {
  sed -i 's/find_package(yaml-cpp 0\.8\.0 QUIET/find_package(yaml-cpp 0.7.0 QUIET/' "$1/CMakeLists.txt"
  grep -q 'find_package(yaml-cpp 0.7.0 QUIET' "$1/CMakeLists.txt"
  cat >>"$1/yaml_cpp_vendor-extras.cmake.in" <<'EOF'

# robotsim patch (scripts/build-ros-tools.sh): yaml-cpp 0.7 (Debian 12) exports its target as `yaml-cpp`,
# 0.8 as `yaml-cpp::yaml-cpp` (what rosbag2 links): alias the former.
if(DEFINED yaml-cpp_DIR AND NOT EXISTS "${yaml-cpp_DIR}/yaml-cpp-config.cmake")
  unset(yaml-cpp_DIR)
endif()
find_package(yaml-cpp QUIET)
if(TARGET yaml-cpp AND NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp INTERFACE IMPORTED)
  set_target_properties(yaml-cpp::yaml-cpp PROPERTIES INTERFACE_LINK_LIBRARIES yaml-cpp)
endif()
EOF
}
patch_readerwriterqueue_local() {
  local md5; md5="$(md5sum "$rwq_tar" | cut -d' ' -f1)"
  sed -i -e "s|URL https://github.com/cameron314/readerwriterqueue/archive/[0-9a-f]*\.zip|URL $rwq_tar|" \
         -e "s|URL_MD5 [0-9a-f]*|URL_MD5 $md5|" "$1/CMakeLists.txt"
  grep -q "URL $rwq_tar" "$1/CMakeLists.txt"
}
if [[ "$(dpkg-query -W -f='${Version}' libyaml-cpp-dev 2>/dev/null)" == 0.7* ]]; then
  apply yaml_cpp_0_7 "${repo_dir[ros2/yaml_cpp_vendor]}" \
    "yaml_cpp_vendor: accept Debian's yaml-cpp 0.7.0 (wants >= 0.8.0, else downloads it) and alias its target yaml-cpp as yaml-cpp::yaml-cpp"
fi
apply readerwriterqueue_local "$rosbag2_dir/shared_queues_vendor" \
  "shared_queues_vendor: ExternalProject URL -> local git archive of readerwriterqueue $rwq_commit (no download)"
patch_lines+=("(no patch) all packages: -DCMAKE_CXX_STANDARD=17 (urdf 2.5.2 picks C++14; the pluginlib 5.4 headers it includes use std::filesystem)")
patch_lines+=("(no patch) mcap_vendor: -DFETCHCONTENT_SOURCE_DIR_MCAP=$mcap_src (mcap $mcap_tag from the mirror)")

# A second top-level include next to the workspace's cmake/ros_wheels_fixup.cmake: the wheels' Fast DDS target
# (fastrtps-shared-targets.cmake) links the manylinux container's /usr/lib64/libtinyxml2.so, which does not
# exist here ("No rule to make target '/usr/lib64/libtinyxml2.so'" linking anything on rcl/rclcpp). Absolute
# library paths of imported targets that do not exist are replaced by find_library(<name>) or dropped
# (libfastrtps.so carries its own tinyxml2 copy, so nothing is lost).
fixup="$src/ros_tools_fixup.cmake"
cat >"$fixup" <<'CMAKE'
# Generated by robotsim scripts/build-ros-tools.sh (CMAKE_PROJECT_TOP_LEVEL_INCLUDES).
function(_robotsim_tools_fix_link_paths dir)
  get_property(_targets DIRECTORY "${dir}" PROPERTY IMPORTED_TARGETS)
  foreach(_target IN LISTS _targets)
    get_target_property(_libs ${_target} INTERFACE_LINK_LIBRARIES)
    if(NOT _libs OR NOT _libs MATCHES "/usr/lib64/")
      continue()
    endif()
    set(_fixed "")
    foreach(_lib IN LISTS _libs)
      if(_lib MATCHES "^/usr/lib64/lib([^/]+)\\.so" AND NOT EXISTS "${_lib}")
        unset(_robotsim_found CACHE)
        find_library(_robotsim_found NAMES ${CMAKE_MATCH_1})
        if(_robotsim_found)
          list(APPEND _fixed "${_robotsim_found}")
        endif()
        unset(_robotsim_found CACHE)
      else()
        list(APPEND _fixed "${_lib}")
      endif()
    endforeach()
    set_target_properties(${_target} PROPERTIES INTERFACE_LINK_LIBRARIES "${_fixed}")
  endforeach()
  get_property(_subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(_sub IN LISTS _subdirs)
    _robotsim_tools_fix_link_paths("${_sub}")
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _robotsim_tools_fix_link_paths "${CMAKE_SOURCE_DIR}")
CMAKE
patch_lines+=("(no patch) every CMake package: CMAKE_PROJECT_TOP_LEVEL_INCLUDES = the workspace's cmake/ros_wheels_fixup.cmake (/opt/python include dirs) + $fixup (the Fast DDS target's missing /usr/lib64/libtinyxml2.so)")

# The wheels' tracetools exports `lttng-ust` as a plain library name (tracetools::tracetools and
# tracetools_LIBRARIES), but the wheel ships it only as the auditwheel copy liblttng-ust-<hash>.so.0.0.0
# ("ld: cannot find -llttng-ust" linking librclcpp.so). A linker-script stub liblttng-ust.so on LIBRARY_PATH
# resolves the name to that very copy, AS_NEEDED: nothing calls lttng-ust directly, so no binary records it.
stubs="$src/link-stubs"; mkdir -p "$stubs"
lttng="$(compgen -G "$venv/lib/python3*/site-packages/ros_tracetools.libs/liblttng-ust-[0-9a-f]*.so.*" | head -n1 || true)"
if [[ -n "$lttng" ]]; then
  printf '/* robotsim scripts/build-ros-tools.sh: -llttng-ust -> the tracetools wheel copy */\nINPUT(AS_NEEDED(%s))\n' \
    "$lttng" >"$stubs/liblttng-ust.so"
  patch_lines+=("(no patch) link: LIBRARY_PATH=$stubs, liblttng-ust.so = linker script INPUT(AS_NEEDED($lttng)) (the tracetools wheel exports -llttng-ust, which only exists under a hashed name)")
fi

# --- environment: the venv only (nothing the caller sourced: install-jazzy's tf2_msgs lacks tf2_ros's srv/action) --
unset COLCON_PREFIX_PATH PYTHONPATH LD_LIBRARY_PATH ROS_PACKAGE_PATH
export VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" AMENT_PREFIX_PATH="$venv" CMAKE_PREFIX_PATH="$venv"
export MAKEFLAGS="-j$jobs" CMAKE_BUILD_PARALLEL_LEVEL="$jobs" LIBRARY_PATH="$stubs"
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-77}"
python="$venv/bin/python"
# The wheels' librcl.so lists the rcl_interfaces/builtin_interfaces *__rosidl_generator_py.so libraries as
# NEEDED, and those leave the CPython API undefined (a Python process provides it). A C++ executable
# therefore fails to link ("undefined reference to `PyExc_RuntimeError'") and would fail to load: executables
# (only: not libraries or Python extension modules) record the venv interpreter's libpython as NEEDED.
read -r pylibdir pylib < <("$python" -c "import sysconfig as s; print(s.get_config_var('LIBDIR'), s.get_config_var('LDLIBRARY'))")
patch_lines+=("(no patch) executables: -DCMAKE_EXE_LINKER_FLAGS=-Wl,--no-as-needed $pylibdir/$pylib (the wheels' librcl.so needs *__rosidl_generator_py.so, which need the CPython API)")
cmake_args=(
  -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
  -DCMAKE_CXX_STANDARD=17   # urdf 2.5.2 defaults to C++14, pluginlib 5.4 headers need std::filesystem
  "-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=$ws/cmake/ros_wheels_fixup.cmake;$fixup"   # repairs of the wheels' CMake exports
  "-DROBOTSIM_PYTHON_EXECUTABLE=$python" "-DPython3_EXECUTABLE=$python" "-DPYTHON_EXECUTABLE=$python"
  "-DFETCHCONTENT_SOURCE_DIR_MCAP=$mcap_src" -DFETCHCONTENT_FULLY_DISCONNECTED=ON
  # binaries find the prefix's and the venv's libraries without LD_LIBRARY_PATH
  "-DCMAKE_INSTALL_RPATH=$prefix/lib;$venv/lib;$pylibdir" -DCMAKE_INSTALL_RPATH_USE_LINK_PATH=ON
  "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--no-as-needed $pylibdir/$pylib"
  --no-warn-unused-cli
)

# --- build ----------------------------------------------------------------------------------------------------
declare -A group_secs group_log
skip_up_to=()
for grp in "${group_names[@]}"; do
  targets_var="group_$grp"; read -ra targets <<<"${!targets_var}"
  say "group $grp: colcon build --packages-up-to ${targets[*]}"
  t0=$(date +%s)
  colcon --log-base "$logs" build --merge-install \
    --paths "${paths[@]}" --build-base "$build" --install-base "$prefix" \
    --packages-up-to "${targets[@]}" ${skip_up_to[@]:+--packages-skip-up-to "${skip_up_to[@]}"} \
    --parallel-workers 1 --continue-on-error \
    --event-handlers console_direct- console_stderr- console_start_end+ summary+ status- \
    --cmake-args "${cmake_args[@]}" || say "group $grp: colcon reported failures"
  group_secs[$grp]=$(( $(date +%s) - t0 ))
  group_log[$grp]="$(readlink -f "$logs/latest_build")"
  skip_up_to+=("${targets[@]}")
done

write_setup

# --- report -----------------------------------------------------------------------------------------------------
t_total=$(( $(date +%s) - t_start ))
mins() { awk -v s="$1" 'BEGIN { printf "%.1f min", s / 60 }'; }
# Per-package outcome from colcon's event logs (JobEnded rc) of this run's groups.
ok=() failed=()
declare -A pkg_secs pkg_log
for grp in "${group_names[@]}"; do
  f="${group_log[$grp]:-}/events.log"; [[ -f "$f" ]] || continue
  while read -r pkg rc secs; do
    pkg_secs[$pkg]=$secs; pkg_log[$pkg]="${group_log[$grp]}/$pkg"
    if [[ "$rc" == 0 ]]; then ok+=("$pkg"); else failed+=("$pkg"); fi
  done < <("$python" - "$f" <<'EOF'
import re, sys
start = {}
for line in open(sys.argv[1]):
    m = re.match(r'\[([\d.]+)\] \(([^)]+)\) (JobStarted|JobEnded): \{(.*)\}', line)
    if not m: continue
    t, pkg, ev, body = float(m[1]), m[2], m[3], m[4]
    if ev == 'JobStarted': start[pkg] = t
    else:
        rc = re.search(r"'rc': (-?\w+)", body)
        print(pkg, rc[1] if rc else '?', int(t - start.get(pkg, t)))
EOF
)
done
{
  echo "robotsim ROS 2 tools prefix: $prefix"
  echo "distro: $distro   built: $(date -u +%FT%TZ)   key: $key   host: $(uname -m) $(nproc) cores"
  echo "venv (ROS core wheels): $venv"
  echo "wall time: $(mins "$t_total") total; per group: $(for g in "${group_names[@]}"; do printf '%s %s; ' "$g" "$(mins "${group_secs[$g]:-0}")"; done)"
  echo
  echo "== repos (owner/name, ref, commit, commit date)"
  printf '%s\n' "${repo_lines[@]}"
  echo
  echo "== packages built (${#ok[@]}), build seconds"
  for p in "${ok[@]}"; do printf '  %-34s %5ss\n' "$p" "${pkg_secs[$p]}"; done
  echo
  echo "== failed (${#failed[@]})"
  for p in "${failed[@]}"; do
    echo "  $p (log: ${pkg_log[$p]}/stdout_stderr.log)"
    grep -h -m4 -E 'error|Error|Failed' "${pkg_log[$p]}/stdout_stderr.log" 2>/dev/null | cut -c1-220 | sed 's/^/      /' || true
  done
  echo
  echo "== patches and source redirections (applied by scripts/build-ros-tools.sh)"
  printf '  %s\n' "${patch_lines[@]}"
  echo
  echo "== system packages used by the vendor packages"
  for d in "${debs[@]}"; do printf '  %s %s\n' "$d" "$(dpkg-query -W -f='${Version}' "$d" 2>/dev/null)"; done
  echo
  echo "== use: source the venv env first, then this prefix last"
  echo "  ROBOTSIM_DISTRO=$distro source $ws/scripts/env.sh; source $prefix/setup_robotsim.bash"
  echo "  (setup_robotsim.bash = colcon's local_setup.bash + LD_LIBRARY_PATH for the wheels' libraries + ROS_DISTRO)"
} >"$info.new"
mv "$info.new" "$info"
say "wrote $info ($(mins "$t_total"))"
want=(robot_state_publisher tf2_ros rosbag2_storage_mcap rosbag2_py ros2bag)
for p in "${want[@]}"; do
  if [[ ! " ${ok[*]} " == *" $p "* ]] && [[ ! -f "$prefix/share/$p/package.xml" ]]; then
    say "not built: $p"; rm -f "$prefix/.robotsim-complete"; exit 1
  fi
done
if ((${#failed[@]})); then rm -f "$prefix/.robotsim-complete"; exit 1; fi
echo "$key" >"$prefix/.robotsim-complete"
say "done: $prefix"
