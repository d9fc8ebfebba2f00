# robotsim on the robot (Jetson, L4T / JetPack 6, ROS 2 Humble): builds the workspace with the project's
# own set-up script; runs the real bringup (drivers of config/real/<robot>.yaml, the motor bridge on the
# MCU's serial device). The firmware bridge and policy nodes are the same code as in the simulator.
#   docker build -f docker/jetson.Dockerfile -t robotsim:jetson .          (on the Jetson, or with arm64 emulation)
#   docker run --rm -it --runtime nvidia --network host --device /dev/ttyACM0 --device /dev/ttyUSB0 \
#     robotsim:jetson                                                       # ros2 launch robotsim real.launch.py
#   ... robotsim:jetson bash -lc 'robotsim contract check --real'           # the contract on the live robot
ARG BASE=dustynv/ros:humble-ros-base-l4t-r36.2.0
FROM ${BASE}
SHELL ["/bin/bash", "-c"]
WORKDIR /robotsim
COPY . /robotsim
# dusty-nv ROS images build ROS from source under ${ROS_ROOT}; their entrypoint sources it as well.
RUN source ${ROS_ROOT}/install/setup.bash && scripts/setup-full-install.sh
ENV MUJOCO_GL=egl
CMD source ${ROS_ROOT}/install/setup.bash && source install/setup.bash && ros2 launch robotsim real.launch.py
