# robotsim on a desktop ROS 2 install (RViz, ros2 launch, ros2 bag): builds the workspace with the
# project's own set-up script and runs the tests by default.
#   docker build -f docker/desktop.Dockerfile -t robotsim:desktop .
#   docker run --rm robotsim:desktop                       # the tests
#   docker run --rm -it robotsim:desktop bash -c 'source install/setup.bash && ros2 launch robotsim sim.launch.py demo:=true'
ARG ROS_DISTRO=kilted
FROM osrf/ros:${ROS_DISTRO}-desktop
ARG ROS_DISTRO
SHELL ["/bin/bash", "-c"]
WORKDIR /robotsim
COPY . /robotsim
RUN source /opt/ros/${ROS_DISTRO}/setup.bash && scripts/setup-full-install.sh
# The network rule holds in containers too: discovery stays on this host.
ENV ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST ROS_LOCALHOST_ONLY=1 MUJOCO_GL=egl
# tests/test_workspace.py checks the bare-machine set-up (scripts/setup.sh, .venv), which this image does not use.
CMD source /opt/ros/${ROS_DISTRO}/setup.bash && source install/setup.bash && \
    python3 -m pytest -q tests --ignore=tests/test_workspace.py
