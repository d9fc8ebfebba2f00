# Bare-machine entry points. Each target performs set-up first (a fast no-op once done).
SHELL := /bin/bash
.DEFAULT_GOAL := help
ROBOT ?= rover
OUT ?= out

.PHONY: help setup build sim test describe clean

help:
	@echo "make sim      set up if needed, then run the simulator (today: generate the $(ROBOT) URDF + MuJoCo model)"
	@echo "make test     set up if needed, then run every test"
	@echo "make setup    Debian packages, .venv with pinned ROS 2 Kilted wheels, colcon build"
	@echo "make clean    remove build/ install/ log/ out/ (keeps .venv)"

setup:
	@scripts/setup.sh

build: setup

# The simulator node arrives with the simulator issue; until then the run command builds and
# checks the default robot's description and writes its URDF and MuJoCo model to $(OUT)/.
sim: setup
	@source scripts/env.sh && robotsim describe $(ROBOT) --urdf $(OUT)/$(ROBOT).urdf --mjcf $(OUT)/$(ROBOT).xml

describe: sim

test: setup
	@scripts/run-tests.sh

clean:
	rm -rf build install log out
