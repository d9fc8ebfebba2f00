# Bare-machine entry points. Each target performs set-up first (a fast no-op once done).
SHELL := /bin/bash
.DEFAULT_GOAL := help
ROBOT ?= rover
OUT ?= out

.PHONY: help setup build sim test test-jazzy docs describe bench bench-arm evaluate evaluate-table evaluate-fast perception chained ablation render-setup lerobot-setup peers-setup bench-peers bench-render clean

help:
	@echo "make sim      set up if needed, then run the simulator bringup headless (ROBOT= WORLD= FLEET= RTF= DURATION="
	@echo "              FIRMWARE= DEMO= REPORT= DRIVER=wander|expert|policy POLICY= GOAL=x,y,"
	@echo "              or ARGS='name:=value ...' with any launch argument)"
	@echo "              DEMO=pick: the rover picks a cube from the floor and drops it in a bin (world pick, the cube at"
	@echo "              seeded placement SEED=), through the arm's actions; ends with status 0 when the simulator saw the"
	@echo "              cube land in the bin, 1 when not"
	@echo "make test     set up if needed, then run every test"
	@echo "make docs     the documentation: reference pages regenerated from the code, then Sphinx (MyST) HTML into"
	@echo "              $(OUT)/docs with warnings as errors (installs requirements/docs.txt into .venv if needed)"
	@echo "make describe generate $(ROBOT)'s URDF and MuJoCo model into $(OUT)/"
	@echo "make bench    measure the simulator on this machine and write the figures into README.md"
	@echo "make bench-arm  arm benchmark of the rover, UR5, Panda, xArm7 and UR10 arms into $(OUT)/bench-arm: IK on 1000"
	@echo "              seeded reachable targets per arm, planning on 100 random feasible queries per arm in a cluttered"
	@echo "              scene, tracking error of 30 planned, jerk-limited trajectories per arm, 20 seeded pick-and-place"
	@echo "              placements of the rover (1-4 min here; SEED=; CHECK=<folder of a previous run> re-runs it into"
	@echo "              $(OUT)/bench-arm-check and compares every row, times aside, without touching README.md)"
	@echo "make evaluate the policy evaluation on two courses, room_obstacles (its training course) and room_obstacles_hard"
	@echo "              (more and larger obstacles, farther goals, wider friction, robot and noise ranges): per course 100"
	@echo "              held-out episodes (a seed drawn at evaluation time) of the shipped policy alone and through its"
	@echo "              velocity shield and of the expert (BASELINES=expert,straight,wander adds the others), through"
	@echo "              the ROS graph on WORKERS= (2) workers into $(OUT)/evaluation/<course>, then the tables in"
	@echo "              docs/policies.md (about 40 min; POLICY= EPISODES= SEED= BASELINES= WORKERS= override)"
	@echo "make evaluate-table  write the tables again from an existing $(OUT)/evaluation (no episodes run)"
	@echo "make evaluate-fast  the same held-out scenarios on the fast path (in-process, minutes): 100 episodes per course"
	@echo "              of the policy alone, through its shield and of the expert, into $(OUT)/fast-evaluation and the"
	@echo "              table in docs/policies.md (POLICY= EPISODES= SEED= WORKERS= override)"
	@echo "make perception  train the perception stage (camera frame -> floor/wall/obstacle map, ONNX) on FRAMES= (400)"
	@echo "              frames of room_obstacles scenarios (SEED=, default 0) into $(OUT)/perception; prints its IoU on"
	@echo "              HELD_OUT= (100) frames of later scenarios beside the all-background baseline, with a picture,"
	@echo "              and on the same scenarios under an appearance shift (room_obstacles_appearance_shift)"
	@echo "make chained  the chained policy's control stage and the end-to-end camera baseline from the same expert"
	@echo "              episodes with cameras (EPISODES=, 300) and one DAgger round each (DAGGER_EPISODES=, 80) into"
	@echo "              $(OUT)/pixels (PERCEPTION= the stage-1 model, default $(OUT)/perception/perception.onnx)"
	@echo "make ablation  both camera policies in closed loop, training appearance and appearance shift, EPISODES="
	@echo "              (100) each on a seed drawn now; the table in docs/pixels-to-control.md (CHAINED= END_TO_END=)"
	@echo "make render-setup  install Blender (bpy 5.0.1, its own Python 3.11 env under ~/.cache/robotsim) for robotsim render"
	@echo "make lerobot-setup  install LeRobot 0.4.4 with PyTorch (its own Python 3.11 env under ~/.cache/robotsim, ~6 GB)"
	@echo "              for robotsim dataset check-lerobot"
	@echo "make peers-setup  install PyBullet 3.2.7 and Drake 1.51.1 (their own Python 3.11 env under ~/.cache/robotsim, ~0.7 GB)"
	@echo "              for the peer benchmark and the URDF consumer tests"
	@echo "make bench-peers  robotsim against PyBullet and Drake on the same room, rover and sensors (REPEATS=3), into"
	@echo "              docs/benchmarks.md"
	@echo "make bench-render  per-frame render times of robotsim render per engine and sample count into $(OUT)/bench-render"
	@echo "make setup    Debian packages, .venv with pinned ROS 2 Kilted wheels, colcon build (ROBOTSIM_DISTRO=jazzy: Jazzy"
	@echo "              in .venv-jazzy, build-/install-/log-jazzy; every target takes it)"
	@echo "make test-jazzy  set up ROS 2 Jazzy beside Kilted and run the suite's ROS-facing files on it (TESTS= others)"
	@echo "make clean    remove build/ install/ log/ out/ and their -jazzy twins (keeps the venvs)"

setup:
	@scripts/setup.sh

build: setup

# The simulator bringup, headless (robotsim launch sim ...): sim node, firmware in the loop, motor
# bridge, state publisher, demo driver, live summary and a run report PNG (Ctrl-C stops everything).
# DURATION=<sim seconds> stops by itself; RTF=0 runs as fast as possible.
sim: setup
	@ROBOT=$(ROBOT) scripts/run-sim.sh $(ARGS)

docs: setup
	@source scripts/env.sh && python -m pip install -q --disable-pip-version-check -r requirements/docs.txt \
		-c "$$ROBOTSIM_CONSTRAINTS" && scripts/build.sh && python docs/generate_reference.py && \
		python -m sphinx -W --keep-going -q -b html docs $(OUT)/docs && echo "documentation: $(OUT)/docs/index.html"

describe: setup
	@source scripts/env.sh && robotsim describe $(ROBOT) --urdf $(OUT)/$(ROBOT).urdf --mjcf $(OUT)/$(ROBOT).xml

bench: setup
	@scripts/run-bench.sh

# Arm benchmark (ROS-free, bench/bench_arm.py; sections ik, planning, tracking, pick): raw CSV rows,
# summary.json and summary.md with Wilson intervals, written into README.md's arm-bench block.
# UR5 and Panda come from example-robot-data, a test-only package: set-up installs the test packages.
bench-arm: export ROBOTSIM_TEST_DEPS = 1
bench-arm: setup
	@source scripts/env.sh && scripts/build.sh && python bench/bench_arm.py --seed $(or $(SEED),0) \
		$(if $(CHECK),--out $(OUT)/bench-arm-check --check $(CHECK),--out $(OUT)/bench-arm --write-readme)

# The policy's closed-loop evaluation (robotsim policy eval, every episode a launch of the simulator and
# the driver node) and its README table (bench/evaluation_table.py; out/evaluation/run.json records the
# machine, date, policy sha256 and command). POLICY=, EPISODES=, SEED= override the shipped evaluation's settings.
EVALUATION_COURSES := room_obstacles room_obstacles_hard
evaluate: setup
	@source scripts/env.sh && scripts/build.sh && for course in $(EVALUATION_COURSES); do \
		python bench/evaluation_table.py --run --write-readme --block evaluation-$$course \
		--policy $(or $(POLICY),config/policies/rover_goal_reaching.onnx) --episodes $(or $(EPISODES),100) \
		$(if $(SEED),--seed $(SEED)) --baselines $(or $(BASELINES),expert) \
		--workers $(or $(WORKERS),2) --randomization config/randomization/$$course.yaml \
		--out $(OUT)/evaluation/$$course || exit $$?; done

evaluate-fast: setup
	@source scripts/env.sh && scripts/build.sh && python bench/fast_evaluation.py --write-readme \
		--policy $(or $(POLICY),config/policies/rover_goal_reaching.onnx) --episodes $(or $(EPISODES),100) \
		$(if $(SEED),--seed $(SEED)) --workers $(or $(WORKERS),2) --out $(OUT)/fast-evaluation

perception: setup
	@source scripts/env.sh && scripts/build.sh && mkdir -p $(OUT)/perception && robotsim perception train \
		--out $(OUT)/perception/perception.onnx --frames $(or $(FRAMES),400) --held-out $(or $(HELD_OUT),100) \
		--seed $(or $(SEED),0) --epochs $(or $(EPOCHS),30) \
		--shifted config/randomization/room_obstacles_appearance_shift.yaml

chained: setup
	@source scripts/env.sh && scripts/build.sh && python bench/pixels_training.py \
		--perception $(or $(PERCEPTION),$(OUT)/perception/perception.onnx) --out $(OUT)/pixels \
		--episodes $(or $(EPISODES),300) --dagger-episodes $(or $(DAGGER_EPISODES),80) --workers $(or $(WORKERS),2)

ablation: setup
	@source scripts/env.sh && scripts/build.sh && python bench/pixels_ablation.py --write-readme \
		--chained $(or $(CHAINED),$(OUT)/pixels/chained.onnx) --end-to-end $(or $(END_TO_END),$(OUT)/pixels/end_to_end.onnx) \
		--episodes $(or $(EPISODES),100) $(if $(SEED),--seed $(SEED)) --workers $(or $(WORKERS),2) --out $(OUT)/ablation

evaluate-table: setup
	@source scripts/env.sh && for course in $(EVALUATION_COURSES); do python bench/evaluation_table.py \
		--write-readme --block evaluation-$$course --out $(OUT)/evaluation/$$course || exit $$?; done


# Blender renders (robotsim render): bpy pins its own Python (3.11) and numpy (< 2), so it gets a venv of its
# own outside the work tree (requirements/render.txt); robotsim render also installs it on first use.
render-setup: setup
	@source scripts/env.sh && scripts/build.sh && robotsim render --setup

lerobot-setup: setup
	@source scripts/env.sh && scripts/build.sh && python -c 'from robotsim_learning.lerobot_reader import LEROBOT; \
		print("LeRobot ready:", LEROBOT.ensure())'

peers-setup: setup
	@source scripts/env.sh && python -c 'import sys; sys.path.insert(0, "bench/peers"); from environment import PEERS; \
		print("peers ready:", PEERS.ensure())'

bench-peers: peers-setup
	@source scripts/env.sh && python bench/bench_peers.py --repeats $(or $(REPEATS),3) --write-readme

bench-render: render-setup
	@source scripts/env.sh && python bench/bench_render.py --out $(OUT)/bench-render

test: export ROBOTSIM_TEST_DEPS = 1
test: setup
	@scripts/run-tests.sh

# The suite's ROS-facing part on ROS 2 Jazzy (its own venv and trees; .ci/run runs it after `make test`).
# A subset, because the whole suite takes about 30 minutes a distro on the 2-core CI machines: the files where
# the distros differ (workspace and set-up, interface type hashes, Humble's API guard, the sim node's topics,
# services, QoS and /clock, the real `ros2 launch`, the firmware bridge, the contract check, the policy node,
# the live bringup, the recorder and the contact sensor (a compat message package)). The one-line refusals at start
# (tests/test_description_errors.py, ~100 processes) run on Kilted only: the refusals are the distro-independent
# config checks, and the whole of .ci/run must stay well inside its 90 minutes on a slow machine (measured there:
# make test 53 min with set-up, make test-jazzy about 20 min). The whole suite on Jazzy: docs/getting-started.md.
JAZZY_TESTS = tests/test_workspace.py tests/test_humble_api.py tests/test_control_msgs.py tests/test_interfaces.py \
	tests/test_sim_node.py tests/test_sim_node_interface.py tests/test_ros2_launch.py tests/test_firmware_in_the_loop.py \
	tests/test_contract_check.py tests/test_policy_node.py tests/test_bringup_live.py \
	tests/test_dataset_ros.py tests/test_contact_sensor.py tests/test_ros_tools.py
test-jazzy: export ROBOTSIM_DISTRO = jazzy
test-jazzy: export ROBOTSIM_TEST_DEPS = 1
test-jazzy:
	@scripts/setup.sh && scripts/run-tests.sh $(or $(TESTS),$(JAZZY_TESTS))

clean:
	rm -rf build install log out build-jazzy install-jazzy log-jazzy
