# Bare-machine entry points. Each target performs set-up first (a fast no-op once done).
SHELL := /bin/bash
.DEFAULT_GOAL := help
ROBOT ?= rover
OUT ?= out

.PHONY: help setup build sim test describe bench bench-arm evaluate evaluate-table render-setup bench-render clean

help:
	@echo "make sim      set up if needed, then run the simulator bringup headless (ROBOT= WORLD= FLEET= RTF= DURATION="
	@echo "              FIRMWARE= DEMO= REPORT= DRIVER=wander|expert|policy POLICY= GOAL=x,y,"
	@echo "              or ARGS='name:=value ...' with any launch argument)"
	@echo "make test     set up if needed, then run every test"
	@echo "make describe generate $(ROBOT)'s URDF and MuJoCo model into $(OUT)/"
	@echo "make bench    measure the simulator on this machine and write the figures into README.md"
	@echo "make bench-arm  arm benchmark (IK on 1000 seeded targets per arm: rover, UR5, Panda) into $(OUT)/bench-arm"
	@echo "              (SEED=, CHECK=<folder of a previous run> re-runs it and compares the rows)"
	@echo "make evaluate the policy issue's evaluation: 50 held-out episodes (seed 2000, room_obstacles) of the shipped"
	@echo "              policy and the expert, straight and wanderer baselines through the ROS graph into $(OUT)/evaluation,"
	@echo "              then the README table (about 1 h; POLICY= EPISODES= SEED= override)"
	@echo "make evaluate-table  write the README table again from an existing $(OUT)/evaluation (no episodes run)"
	@echo "make render-setup  install Blender (bpy 5.0.1, its own Python 3.11 env under ~/.cache/robotsim) for robotsim render"
	@echo "make bench-render  per-frame render times of robotsim render per engine and sample count into $(OUT)/bench-render"
	@echo "make setup    Debian packages, .venv with pinned ROS 2 Kilted wheels, colcon build"
	@echo "make clean    remove build/ install/ log/ out/ (keeps .venv)"

setup:
	@scripts/setup.sh

build: setup

# The simulator bringup, headless (robotsim launch sim ...): sim node, firmware in the loop, motor
# bridge, state publisher, demo driver, live summary and a run report PNG (Ctrl-C stops everything).
# DURATION=<sim seconds> stops by itself; RTF=0 runs as fast as possible.
sim: setup
	@ROBOT=$(ROBOT) scripts/run-sim.sh $(ARGS)

describe: setup
	@source scripts/env.sh && robotsim describe $(ROBOT) --urdf $(OUT)/$(ROBOT).urdf --mjcf $(OUT)/$(ROBOT).xml

bench: setup
	@scripts/run-bench.sh

# Arm benchmark (ROS-free): raw CSV rows, summary.json and summary.md with Wilson intervals.
# UR5 and Panda come from example-robot-data, a test-only package: set-up installs the test packages.
bench-arm: export ROBOTSIM_TEST_DEPS = 1
bench-arm: setup
	@source scripts/env.sh && scripts/build.sh && python scripts/bench_arm.py --ik-targets 1000 --seed $(or $(SEED),0) \
		--out $(OUT)/bench-arm$(if $(CHECK),-check --check $(CHECK))

# The policy issue's closed-loop evaluation (robotsim evaluate, every episode a launch of the simulator and
# the driver node) and its README table (bench/evaluation_table.py; out/evaluation/run.json records the
# machine, date, policy sha256 and command). POLICY=, EPISODES=, SEED= override the issue's settings.
evaluate: setup
	@source scripts/env.sh && scripts/build.sh && python bench/evaluation_table.py --run --write-readme \
		--policy $(or $(POLICY),config/policies/rover_goal_reaching.onnx) --episodes $(or $(EPISODES),50) \
		--seed $(or $(SEED),2000) --randomization config/randomization/room_obstacles.yaml --out $(OUT)/evaluation

evaluate-table: setup
	@source scripts/env.sh && python bench/evaluation_table.py --write-readme --out $(OUT)/evaluation


# Blender renders (robotsim render): bpy pins its own Python (3.11) and numpy (< 2), so it gets a venv of its
# own outside the work tree (requirements/render.txt); robotsim render also installs it on first use.
render-setup: setup
	@source scripts/env.sh && scripts/build.sh && robotsim render --setup

bench-render: render-setup
	@source scripts/env.sh && python bench/bench_render.py --out $(OUT)/bench-render

test: export ROBOTSIM_TEST_DEPS = 1
test: setup
	@scripts/run-tests.sh

clean:
	rm -rf build install log out
