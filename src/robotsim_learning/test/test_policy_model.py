"""Behaviour cloning core (ROS-free): the observation built from the robot's topics, seeded training with
JAX + optax, the ONNX export equal to the training framework within 1e-5 under onnxruntime, and the
runtime's refusals (bad files, a policy for another robot, non-finite inputs and outputs)."""

import math

import numpy as np
import pytest

from robotsim_core.description import load_robot
from robotsim_learning.observation import (ObservationSpec, goal_in_base, observation, pool_scan,
                                           spec_for_robot)

jax = pytest.importorskip('jax', reason='training needs requirements/train.txt (Python 3.11+)')
from robotsim_learning.policy_model import TrainConfig, act_jax, export_onnx, train  # noqa: E402
from robotsim_learning.policy_runtime import InferenceError, PolicyFileError, PolicyRuntime  # noqa: E402

SPEC = ObservationSpec(scan_samples=360, scan_range_max=12.0, image_width=32, image_height=24, image_sectors=(3, 4))


def synthetic(count: int, seed: int):
    """Observations of random scans, images, twists and goals; actions of a goal-seeking rule."""
    rng = np.random.default_rng(seed)
    rows, actions = [], []
    for _ in range(count):
        goal = rng.uniform(-3, 3, 2)
        ranges = rng.uniform(0.2, 12.0, 360)
        ranges[rng.integers(0, 360, 20)] = np.inf
        rgb = rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)
        rows.append(observation(SPEC, ranges, rgb, tuple(rng.uniform(-0.3, 0.3, 2)), goal))
        bearing = math.atan2(goal[1], goal[0])
        actions.append([0.3 * math.tanh(np.hypot(*goal)) * max(0.0, math.cos(bearing)), 1.2 * math.tanh(bearing)])
    return np.array(rows), np.array(actions, dtype=np.float32)


def test_the_observation_of_the_rover():
    spec = spec_for_robot(load_robot('rover'))
    assert (spec.scan_samples, spec.image_width, spec.image_height) == (360, 320, 240)
    assert spec.size == len(spec.names()) == 36 + 12 * 16 + 2 + 3
    ranges = np.full(360, 5.0)
    ranges[0], ranges[1], ranges[20] = np.inf, np.nan, -np.inf  # REP 117 values
    pooled = pool_scan(spec, ranges)
    assert pooled[0] == 0.0 and pooled[2] == 0.0 and pooled[5] == 5.0  # NaN / -Inf: blocked; +Inf: max range
    assert np.allclose(goal_in_base((1.0, 1.0), (1.0, 0.0, math.pi / 2)), (1.0, 0.0))
    with pytest.raises(ValueError, match='expected 360 scan ranges, got 359'):
        pool_scan(spec, np.ones(359))
    assert ObservationSpec.from_json(spec.to_json()) == spec


def test_training_is_seeded_and_beats_the_mean_baseline():
    x, y = synthetic(1200, seed=1)
    config = TrainConfig(hidden=(32, 32), epochs=25, batch_size=64, seed=3)
    first = train(x, y, SPEC, (0.4, 1.5), config)
    second = train(x, y, SPEC, (0.4, 1.5), config)
    for (w1, b1), (w2, b2) in zip(first.layers, second.layers):
        assert np.array_equal(w1, w2) and np.array_equal(b1, b2)
    report = first.report
    assert report['validation_loss'] < 0.5 * report['mean_baseline_loss'], report


def test_the_cosine_schedule_decays_the_step_and_is_recorded():
    """The cosine schedule trains to a different, seeded result than the constant step (the schedule is applied),
    is named in the report, and an unknown schedule is refused naming the field."""
    x, y = synthetic(600, seed=2)
    constant = train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(16,), epochs=6, batch_size=64, seed=3))
    cosine = [train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(16,), epochs=6, batch_size=64, seed=3,
                                                          schedule='cosine')) for _ in range(2)]
    assert np.array_equal(cosine[0].layers[0][0], cosine[1].layers[0][0])
    assert not np.array_equal(constant.layers[0][0], cosine[0].layers[0][0])
    assert (constant.report['schedule'], cosine[0].report['schedule']) == ('constant', 'cosine')
    with pytest.raises(ValueError, match="schedule: expected one of constant, cosine, got 'linear'"):
        train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(16,), epochs=1, schedule='linear'))


def test_an_ensemble_acts_on_the_mean_of_its_networks_in_onnx_too(tmp_path):
    """Three networks from one seed: member 0 is the single network of that seed, the others differ; the ensemble's
    action is their mean in NumPy, JAX and the exported ONNX graph (onnxruntime) alike."""
    x, y = synthetic(400, seed=4)
    config = TrainConfig(hidden=(16, 16), epochs=4, batch_size=64, seed=5)
    single = train(x, y, SPEC, (0.4, 1.5), config)
    ensemble = train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(16, 16), epochs=4, batch_size=64, seed=5, ensemble=3))
    assert len(ensemble.networks) == 3 and ensemble.report['ensemble'] == 3
    assert np.array_equal(ensemble.layers[0][0], single.layers[0][0])
    assert not np.array_equal(ensemble.members[0][0][0], ensemble.layers[0][0])
    parts = [train(x, y, SPEC, (0.4, 1.5), config).act(x[:20])]
    from robotsim_learning.policy_model import TrainedPolicy
    for layers in ensemble.members:
        parts.append(TrainedPolicy(SPEC, layers, ensemble.mean, ensemble.std, ensemble.action_scale).act(x[:20]))
    assert np.allclose(ensemble.act(x[:20]), np.mean(parts, axis=0), atol=1e-6)
    assert np.allclose(act_jax(ensemble, x[:20]), ensemble.act(x[:20]), atol=1e-5)
    path = tmp_path / 'ensemble.onnx'
    export_onnx(ensemble, str(path))
    runtime = PolicyRuntime(str(path))
    np.testing.assert_allclose(runtime.act_batch(x[:20]), ensemble.act(x[:20]), atol=1e-5)
    with pytest.raises(ValueError, match='ensemble: expected 1 ... 16 networks, got 0'):
        train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(16,), epochs=1, ensemble=0))


def test_the_bins_head_picks_one_of_disagreeing_demonstrations_where_tanh_averages(tmp_path):
    """Demonstrations that turn left or right at random from the same kind of observation (an obstacle straight
    ahead, passed on either side): the tanh head learns their average (hardly turning), the bins head turns one
    way or the other at the demonstrated rate; its command is one of its grid's, seeded, the same in NumPy, JAX and
    ONNX (one network and an ensemble), and bad grids are refused naming the field."""
    x, _ = synthetic(1200, seed=6)
    turn = np.where(np.random.default_rng(7).random(len(x)) < 0.5, 1.2, -1.2)
    y = np.stack([np.full(len(x), 0.2), turn], axis=1).astype(np.float32)
    config = dict(hidden=(32, 32), epochs=12, batch_size=64, seed=3)
    tanh = train(x, y, SPEC, (0.4, 1.5), TrainConfig(**config))
    bins = train(x, y, SPEC, (0.4, 1.5), TrainConfig(**config, head='bins', bins=(5, 9)))
    probe, _ = synthetic(200, seed=8)
    assert np.mean(np.abs(tanh.act(probe)[:, 1])) < 0.6
    chosen = bins.act(probe)
    assert np.mean(np.abs(chosen[:, 1]) >= 0.9) >= 0.95, chosen[:10]  # a turn, one way or the other
    assert (chosen[:, 1] > 0).any() and (chosen[:, 1] < 0).any()
    assert np.mean(np.abs(chosen[:, 0] - 0.2) < 1e-5) >= 0.9
    assert bins.report['head'] == 'bins' and bins.report['bins'] == [5, 9]
    again = train(x, y, SPEC, (0.4, 1.5), TrainConfig(**config, head='bins', bins=(5, 9)))
    assert np.array_equal(again.layers[-1][0], bins.layers[-1][0])
    ensemble = train(x, y, SPEC, (0.4, 1.5), TrainConfig(**{**config, 'epochs': 3}, head='bins', bins=(5, 9),
                                                         ensemble=2))
    for policy, name in ((bins, 'bins.onnx'), (ensemble, 'bins_ensemble.onnx')):
        export_onnx(policy, str(tmp_path / name))
        runtime = PolicyRuntime(str(tmp_path / name))
        reference = policy.act(probe)
        assert {tuple(row) for row in reference} <= {tuple(row) for row in policy.bin_actions}
        np.testing.assert_allclose(runtime.act_batch(probe), reference, atol=1e-6)
        np.testing.assert_allclose(act_jax(policy, probe), reference, atol=1e-6)
    with pytest.raises(ValueError, match=r'bins: expected 2 cell counts \(linear, angular\), each 2 ... 64, got \[1, 9\]'):
        train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(8,), epochs=1, head='bins', bins=(1, 9)))
    with pytest.raises(ValueError, match="head: expected one of tanh, bins, got 'softmax'"):
        train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(8,), epochs=1, head='softmax'))


def trained_with_and_without(**option):
    """A small bins-head policy trained with an option that applies only when it acts, checked to have the weights
    of the same training without it; returns it and its samples (x, y)."""
    x, _ = synthetic(300, seed=6)
    y = np.stack([np.full(len(x), 0.2), np.where(x[:, 0] > 6, 1.2, -1.2)], axis=1).astype(np.float32)
    config = dict(hidden=(16,), epochs=2, batch_size=64, seed=3, head='bins', bins=(3, 5))
    trained = train(x, y, SPEC, (0.4, 1.5), TrainConfig(**config, **option))
    assert np.array_equal(trained.layers[-1][0], train(x, y, SPEC, (0.4, 1.5), TrainConfig(**config)).layers[-1][0])
    return trained, x, y


def test_a_turn_commitment_holds_a_torn_turn_and_yields_to_a_confident_one(tmp_path):
    """A bins head torn between left and right (55 % right, 45 % left) and one sure of right (the observation's
    first value raises right's score): with --turn-commit 1 a policy that was turning left keeps turning left where
    it is torn, and turns right where it is sure; not turning (or slower than 0.2 rad/s) it acts as without a
    commitment. Its file takes the previous command as a second input; NumPy, JAX and ONNX agree, the runtime
    keeps its last command until reset(), the driver until a new goal; training is unchanged by it, and it is
    refused for the tanh head."""
    from robotsim_learning.policy_model import PREVIOUS_INPUT, TrainedPolicy
    bin_actions = np.array([[linear, angular] for linear in (0.1, 0.3) for angular in (-1.2, 0.0, 1.2)], np.float32)
    weights = np.zeros((SPEC.size, 6), np.float32)
    weights[0, [0, 3]] = 3.0  # right's score rises with the first value
    bias = np.array([np.log(0.55), -20.0, np.log(0.45)] * 2, np.float32)

    def policy(turn_commit):
        return TrainedPolicy(SPEC, [(weights, bias)], np.zeros(SPEC.size, np.float32), np.ones(SPEC.size, np.float32),
                             np.array([0.4, 1.5], np.float32), bin_actions=bin_actions, bins=(2, 3), bin_window=(1, 1),
                             turn_commit=turn_commit)
    plain, held = policy(0.0), policy(1.0)
    torn, sure = np.zeros((4, SPEC.size), np.float32), np.zeros((4, SPEC.size), np.float32)
    sure[:, 0] = 1.0
    left, right = np.repeat([[0.2, 1.2]], 4, axis=0), np.repeat([[0.2, -1.2]], 4, axis=0)
    assert (plain.act(torn)[:, 1] < -1.0).all() and (plain.act(sure)[:, 1] < -1.0).all()
    assert (held.act(torn, left)[:, 1] > 1.0).all() and (held.act(torn, right)[:, 1] < -1.0).all()
    assert (held.act(sure, left)[:, 1] < -1.0).all()
    for slow in (np.zeros((4, 2)), np.repeat([[0.3, 0.15]], 4, axis=0)):
        np.testing.assert_array_equal(held.act(torn, slow), plain.act(torn))
    path = tmp_path / 'held.onnx'
    export_onnx(held, str(path))
    runtime = PolicyRuntime(str(path))
    assert runtime.commits and PREVIOUS_INPUT in {i.name for i in runtime.session.get_inputs()}
    probe = np.concatenate([torn, sure, torn])
    previous = np.concatenate([left, left, np.zeros((4, 2))])
    reference = held.act(probe, previous)
    np.testing.assert_allclose(runtime.act_batch(probe, previous), reference, atol=1e-6)
    np.testing.assert_allclose(act_jax(held, probe, previous), reference, atol=1e-6)
    np.testing.assert_allclose(runtime.act_batch(probe), plain.act(probe), atol=1e-6)
    runtime.previous = np.array([[0.2, 1.2]], np.float32)  # turning left: it holds the turn, and remembers it
    assert runtime.act(torn[0])[1] > 1.0 and runtime.act(torn[0])[1] > 1.0
    runtime.reset()
    assert runtime.act(torn[0])[1] < -1.0
    # The driver (the node's and the episodes') starts committed to nothing at each new goal, not only at reset.
    from types import SimpleNamespace
    from robotsim_learning.driving import DriveContext, Observation, PolicyDriver
    driver = PolicyDriver(str(path))
    driver.reset(DriveContext(robot=lambda: None))

    def goal(x, y):
        pose = SimpleNamespace(pose=SimpleNamespace(position=SimpleNamespace(x=x, y=y, z=0.0)))
        return Observation(0, {'goal_pose': pose}, {'goal_pose'})
    for step, (x, y, kept) in enumerate(((1.0, 2.0, True), (1.0, 2.0, True), (3.0, -1.0, False))):
        driver.runtime.previous = np.array([[0.2, 1.2]], np.float32)
        assert driver.act(goal(x, y)) == (0.0, 0.0)  # no scan yet: it stands still
        assert driver.runtime.previous.any() == kept, step
    export_onnx(plain, str(tmp_path / 'plain.onnx'))
    assert not PolicyRuntime(str(tmp_path / 'plain.onnx')).commits
    ensemble = policy(1.0)  # an ensemble commits on the mean of its networks' probabilities
    ensemble.members = [[(weights * 0.5, np.array([np.log(0.3), -20.0, np.log(0.7)] * 2, np.float32))]]
    export_onnx(ensemble, str(tmp_path / 'ensemble.onnx'))
    np.testing.assert_allclose(PolicyRuntime(str(tmp_path / 'ensemble.onnx')).act_batch(probe, previous),
                               ensemble.act(probe, previous), atol=1e-6)
    trained, x, y = trained_with_and_without(turn_commit=1.0)
    assert trained.report['turn_commit'] == 1.0 and trained.commits
    with pytest.raises(ValueError, match=r"turn_commit: expected 0 ... 100 \(the bins head only\), got 1.0 with head 'tanh'"):
        train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(8,), epochs=1, turn_commit=1.0))


def test_a_sampling_policy_draws_its_cells_from_the_tempered_probabilities(tmp_path):
    """A bins head of six cells with probabilities 0.5, 0.3, 0.15, 0.05, 0, 0 and --sample-temperature T: over
    draws spread evenly on [0, 1) each cell is taken as often as p ** (1/T) normalised says (T = 1: the network's
    own probabilities; T = 0.5: their squares; T = 0.02: the best cell alone); NumPy, JAX and ONNX take the same
    cell for the same draw, with the window's mean around it; the runtime's draws repeat with its seed (at
    construction, at reset(seed), and the driver's from the run's DriveContext seed) and differ with another seed;
    a policy that does not sample takes no draw. Training is unchanged by it, and it is refused for the tanh head."""
    from robotsim_learning.driving import DriveContext, PolicyDriver
    from robotsim_learning.policy_model import UNIFORM_INPUT, TrainedPolicy
    bin_actions = np.array([[linear, angular] for linear in (0.1, 0.3) for angular in (-1.2, 0.0, 1.2)], np.float32)
    probabilities = np.array([0.5, 0.3, 0.15, 0.05, 0.0, 0.0])
    bias = np.log(np.maximum(probabilities, 1e-12)).astype(np.float32)  # the last two: 1e-12, as good as never
    weights = np.zeros((SPEC.size, 6), np.float32)

    def policy(temperature, window=(0, 0)):
        return TrainedPolicy(SPEC, [(weights, bias)], np.zeros(SPEC.size, np.float32), np.ones(SPEC.size, np.float32),
                             np.array([0.4, 1.5], np.float32), bin_actions=bin_actions, bins=(2, 3), bin_window=window,
                             sample_temperature=temperature)
    draws = ((np.arange(2000) + 0.5) / 2000).astype(np.float32)[:, None]
    rows = np.zeros((len(draws), SPEC.size), np.float32)
    for temperature, expected in ((1.0, probabilities), (0.5, probabilities ** 2 / np.sum(probabilities ** 2)),
                                  (0.02, np.eye(6)[0])):
        sampler = policy(temperature)
        commands = sampler.act(rows, uniform=draws)
        taken = [(commands == cell).all(axis=1).mean() for cell in bin_actions]
        np.testing.assert_allclose(taken, expected, atol=2e-3)
        path = tmp_path / f'sampling_{temperature}.onnx'
        export_onnx(sampler, str(path))
        runtime = PolicyRuntime(str(path))
        assert runtime.samples and not runtime.commits
        assert UNIFORM_INPUT in {i.name for i in runtime.session.get_inputs()}
        np.testing.assert_array_equal(runtime.act_batch(rows, uniform=draws), commands)
        np.testing.assert_array_equal(act_jax(sampler, rows, uniform=draws), commands)
    windowed = policy(1.0, window=(1, 1))
    path = tmp_path / 'windowed.onnx'
    export_onnx(windowed, str(path))
    runtime = PolicyRuntime(str(path), seed=11)
    reference = windowed.act(rows, uniform=draws)
    assert len(np.unique(reference, axis=0)) == 3  # the windows around the four cells drawn (0's and 3's alike)
    np.testing.assert_allclose(runtime.act_batch(rows, uniform=draws), reference, atol=1e-6)
    np.testing.assert_allclose(act_jax(windowed, rows, uniform=draws), reference, atol=1e-6)
    first = [runtime.act(rows[0]) for _ in range(30)]
    runtime.reset(11)
    assert [runtime.act(rows[0]) for _ in range(30)] == first
    runtime.reset()  # forgets the previous command, keeps drawing from where it is
    assert [runtime.act(rows[0]) for _ in range(30)] != first
    runtime.reset(12)
    assert [runtime.act(rows[0]) for _ in range(30)] != first
    driver = PolicyDriver(str(path))
    driver.reset(DriveContext(robot=lambda: None, seed=11))
    assert [driver.runtime.act(rows[0]) for _ in range(30)] == first
    plain = tmp_path / 'plain.onnx'
    export_onnx(policy(0.0), str(plain))
    still = PolicyRuntime(str(plain))
    assert not still.samples and UNIFORM_INPUT not in {i.name for i in still.session.get_inputs()}
    state = still.random.bit_generator.state
    still.act(rows[0])
    assert still.random.bit_generator.state == state  # no draw taken
    trained, x, y = trained_with_and_without(sample_temperature=0.5)
    assert trained.report['sample_temperature'] == 0.5 and trained.samples
    with pytest.raises(ValueError, match=r"sample_temperature: expected 0 ... 10 \(the bins head only\), got 1.0 "
                                         r"with head 'tanh'"):
        train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(8,), epochs=1, sample_temperature=1.0))


def test_a_policy_drawing_on_the_spot_draws_only_after_a_turn_on_the_spot(tmp_path):
    """--sample-on-spot: the cell is drawn (as --sample-temperature draws it) only where the previous command was
    slower than SPOT_SPEED and turned faster than TURN_COMMIT_RATE, and the best cell is taken after a standstill,
    a drive, a slow turn or a turning drive (either sign); NumPy, JAX and ONNX agree row by row, with the window and
    through the turn commitment; the runtime gives the file its previous command, so a run turns on the spot, draws,
    and after a drive takes the best cell again. Refused without a temperature, in training and on the command line."""
    from robotsim_learning.policy_model import PREVIOUS_INPUT, SPOT_SPEED, TURN_COMMIT_RATE, TrainedPolicy
    bin_actions = np.array([[linear, angular] for linear in (0.0, 0.3) for angular in (-1.2, 0.0, 1.2)], np.float32)
    probabilities = np.array([0.4, 0.1, 0.05, 0.05, 0.1, 0.3])
    bias = np.log(probabilities).astype(np.float32)
    weights = np.zeros((SPEC.size, 6), np.float32)

    def policy(window=(0, 0), turn_commit=0.0, on_spot=True):
        return TrainedPolicy(SPEC, [(weights, bias)], np.zeros(SPEC.size, np.float32), np.ones(SPEC.size, np.float32),
                             np.array([0.4, 1.5], np.float32), bin_actions=bin_actions, bins=(2, 3), bin_window=window,
                             sample_temperature=1.0, sample_on_spot=on_spot, turn_commit=turn_commit)
    draws = ((np.arange(600) + 0.5) / 600).astype(np.float32)[:, None]
    rows = np.zeros((len(draws), SPEC.size), np.float32)
    spinning = [(0.0, 1.0), (-0.05, -0.5), (SPOT_SPEED * 0.9, TURN_COMMIT_RATE * 1.1)]
    driving = [(0.0, 0.0), (0.3, 0.0), (0.3, 1.2), (SPOT_SPEED * 1.1, 1.0), (0.0, TURN_COMMIT_RATE * 0.9),
               (-0.2, -1.0)]
    always = policy(on_spot=False)
    for window in ((0, 0), (1, 1)):
        spot = policy(window)
        path = tmp_path / f'spot_{window[0]}.onnx'
        export_onnx(spot, str(path))
        runtime = PolicyRuntime(str(path))
        assert runtime.samples and PREVIOUS_INPUT in {i.name for i in runtime.session.get_inputs()}
        for previous, drawn in [(p, True) for p in spinning] + [(p, False) for p in driving]:
            before = np.repeat([previous], len(draws), axis=0).astype(np.float32)
            commands = spot.act(rows, before, draws)
            expected = policy(window, on_spot=False).act(rows, before, draws) if drawn else \
                policy(window, on_spot=False).act(rows, before, np.full_like(draws, 0.01))  # the best cell
            np.testing.assert_array_equal(commands, expected, err_msg=str(previous))
            assert (len(np.unique(commands, axis=0)) > 1) == drawn, previous
            np.testing.assert_allclose(runtime.act_batch(rows, before, draws), commands, atol=1e-6)
            np.testing.assert_allclose(act_jax(spot, rows, before, draws), commands, atol=1e-6)
    held = policy(turn_commit=1.0)  # the commitment weighs the cells first; the draw then falls on them
    mixed = np.array(spinning * 200, np.float32)
    export_onnx(held, str(tmp_path / 'held.onnx'))
    np.testing.assert_allclose(PolicyRuntime(str(tmp_path / 'held.onnx')).act_batch(rows, mixed, draws),
                               held.act(rows, mixed, draws), atol=1e-6)
    np.testing.assert_allclose(act_jax(held, rows, mixed, draws), held.act(rows, mixed, draws), atol=1e-6)
    export_onnx(always, str(tmp_path / 'always.onnx'))
    assert PREVIOUS_INPUT not in {i.name for i in PolicyRuntime(str(tmp_path / 'always.onnx')).session.get_inputs()}
    best = tuple(float(v) for v in bin_actions[0])
    runtime = PolicyRuntime(str(tmp_path / 'spot_0.onnx'), seed=5)
    assert runtime.act(rows[0]) == best  # from a standstill: the best cell, turning on the spot
    turns = [runtime.act(rows[0]) for _ in range(200)]  # then drawn, each decision after a turn on the spot ...
    assert len(set(turns)) > 2
    runtime.previous = np.array([[0.3, 0.0]], np.float32)  # ... and the best cell again after a drive
    assert runtime.act(rows[0]) == best
    x, y = synthetic(200, seed=4)
    with pytest.raises(ValueError, match=r'sample_on_spot: applies to a policy that draws its cell'):
        train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(8,), epochs=1, head='bins', sample_on_spot=True))
    trained, _, _ = trained_with_and_without(sample_temperature=0.5, sample_on_spot=True)
    assert trained.report['sample_on_spot'] is True and trained.draws_on_spot and trained.takes_previous


def test_onnx_export_equals_the_training_framework(tmp_path):
    x, y = synthetic(600, seed=2)
    policy = train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(32, 32), epochs=5, batch_size=64))
    path = tmp_path / 'policy.onnx'
    export_onnx(policy, str(path))
    runtime = PolicyRuntime(str(path))
    batch, _ = synthetic(64, seed=9)
    np.testing.assert_allclose(runtime.act_batch(batch), act_jax(policy, batch), atol=1e-5)
    np.testing.assert_allclose(runtime.act_batch(batch), policy.act(batch), atol=1e-5)
    assert runtime.spec == SPEC
    linear, angular = runtime.act(batch[0])
    assert abs(linear) <= 0.4 and abs(angular) <= 1.5


def test_policy_files_that_cannot_drive_the_robot_are_refused(tmp_path):
    with pytest.raises(PolicyFileError, match='policy file not found'):
        PolicyRuntime(str(tmp_path / 'missing.onnx'))
    garbage = tmp_path / 'garbage.onnx'
    garbage.write_bytes(b'not a model at all')
    with pytest.raises(PolicyFileError, match='not a readable ONNX model'):
        PolicyRuntime(str(garbage))
    x, y = synthetic(200, seed=4)
    policy = train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(8,), epochs=1))
    path = tmp_path / 'policy.onnx'
    export_onnx(policy, str(path))
    runtime = PolicyRuntime(str(path))
    rover = spec_for_robot(load_robot('rover'))
    with pytest.raises(PolicyFileError, match='the policy expects image width 32, the robot has 320'):
        runtime.check_fits(rover)
    with pytest.raises(InferenceError, match='NaN or Inf'):
        runtime.act(np.full(SPEC.size, np.nan, dtype=np.float32))
    with pytest.raises(InferenceError, match=f'expected an observation of {SPEC.size} values'):
        runtime.act(np.zeros(5, dtype=np.float32))
    broken = policy
    broken.layers[-1] = (np.full_like(broken.layers[-1][0], np.nan), broken.layers[-1][1])
    export_onnx(broken, str(tmp_path / 'nan.onnx'))
    with pytest.raises(InferenceError, match='non-finite command'):
        PolicyRuntime(str(tmp_path / 'nan.onnx')).act(x[0])


def test_decisions_next_to_an_obstacle_weigh_near_weight():
    """A rare decision beside an obstacle (5 %: turn on the spot) is fitted far better when it weighs 20."""
    x, y = synthetic(1000, seed=2)
    rng = np.random.default_rng(5)
    x[:, :SPEC.sectors] = rng.uniform(2.0, 12.0, (len(x), SPEC.sectors))  # nothing near ...
    near = rng.random(len(x)) < 0.05
    x[near, 3] = 0.3  # ... but an obstacle 0.3 m away in sector 3
    y[near] = (0.0, 1.2)
    errors = {}
    for weight in (1.0, 20.0):
        policy = train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(16,), epochs=12, batch_size=64, seed=0,
                                                          near_weight=weight, near_range=0.5))
        errors[weight] = float(np.mean(((policy.act(x[near]) - y[near]) / (0.4, 1.5)) ** 2))
    assert errors[20.0] < 0.5 * errors[1.0], errors
    assert 0.5 * near.sum() < policy.report['near_samples'] <= near.sum()  # those of the training split
    assert 'near_weight' not in train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(4,), epochs=1)).report
    with pytest.raises(ValueError, match='near_weight: expected 1 ... 100'):
        train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(4,), epochs=1, near_weight=0.5))


def test_a_spec_without_the_twist_leaves_the_robots_motion_out(tmp_path):
    """--no-twist: the rover's observation without odom_linear_x and odom_angular_z, the same values otherwise
    in the same order; the spec survives the policy file (the runtime reads it back and acts as NumPy), and a file
    whose spec says twist is anything but true or false is refused with one line naming the field."""
    import json

    import onnx

    from robotsim_learning.policy_runtime import observation_spec_from_metadata
    full = spec_for_robot(load_robot('rover'), 72, image=False, heading='imu')
    still = spec_for_robot(load_robot('rover'), 72, image=False, heading='imu', twist=False)
    assert full.twist and not still.twist and still.size == full.size - 2 == 75
    assert still.names() == [name for name in full.names() if not name.startswith('odom_')]
    ranges = np.random.default_rng(4).uniform(0.3, 6.0, full.scan_samples)
    with_twist = observation(full, ranges, None, (0.25, -0.8), (2.0, 1.0))
    without = observation(still, ranges, None, (0.25, -0.8), (2.0, 1.0))
    np.testing.assert_array_equal(without, np.delete(with_twist, [72, 73]))
    assert with_twist[72:74].tolist() == pytest.approx([0.25, -0.8])
    rows = np.stack([observation(still, ranges, None, (0.0, 0.0), goal)
                     for goal in np.random.default_rng(5).uniform(-3, 3, (200, 2))])
    policy = train(rows, np.tile(np.array([[0.2, 0.1]], np.float32), (len(rows), 1)), still, (0.4, 1.5),
                   TrainConfig(hidden=(8,), epochs=1))
    path = tmp_path / 'still.onnx'
    export_onnx(policy, str(path))
    runtime = PolicyRuntime(str(path))
    assert runtime.spec == still
    np.testing.assert_allclose(runtime.act_batch(rows[:10]), policy.act(rows[:10]), atol=1e-5)
    text = next(prop.value for prop in onnx.load(str(path)).metadata_props if prop.key == 'robotsim.observation_spec')
    with pytest.raises(PolicyFileError, match=r'^x\.onnx: metadata robotsim\.observation_spec: twist: expected true or '
                                              r'false, got "no"$'):
        observation_spec_from_metadata('x.onnx', json.dumps({**json.loads(text), 'twist': 'no'}))
    old = json.loads(full.to_json())
    del old['twist']  # a file written before the option: its network observed the twist
    assert observation_spec_from_metadata('old.onnx', json.dumps(old)).twist


def test_corridors_measure_the_free_way_ahead_and_toward_the_goal(tmp_path):
    """The rover's spec with corridors: a post 1.5 m ahead of the lidar blocks the corridor ahead (at 1.5 m less the
    lidar's offset and the footprint's radius) and, with the goal straight ahead, the one toward the goal, not
    those 20 and 40 degrees beside it; a goal to the left turns the goal's corridors with it; the spec survives the
    policy file (onnxruntime reads the same spec back, and computes the same actions)."""
    from robotsim_learning.observation import CORRIDORS, corridor_lengths
    spec = spec_for_robot(load_robot('rover'), 72, image=False, heading='imu', corridors=CORRIDORS)
    assert spec.size == 72 + 5 + 6 and spec.names()[-6:] == [
        'corridor_ahead', 'corridor_goal_+0deg', 'corridor_goal_-20deg', 'corridor_goal_+20deg',
        'corridor_goal_-40deg', 'corridor_goal_+40deg']
    angles = spec.scan_angle_min + spec.scan_angle_increment * np.arange(spec.scan_samples)
    ranges = np.full(spec.scan_samples, np.inf)
    x, y = spec.scan_origin[0] + 1.5 * np.cos(angles), 1.5 * np.sin(angles)
    post = np.hypot(x - (spec.scan_origin[0] + 1.5), y) < 0.06
    ranges[post] = 1.5
    ahead = 1.5 + spec.scan_origin[0] - spec.corridor_half_width
    lengths = corridor_lengths(spec, ranges, (4.0, 0.0))
    assert lengths[0] == pytest.approx(ahead, abs=0.02) and lengths[1] == pytest.approx(ahead, abs=0.02)
    assert np.all(lengths[2:] == spec.corridor_length)
    left = corridor_lengths(spec, ranges, (0.0, 4.0))  # goal 90 degrees left: its corridors point away from the post
    assert left[0] == pytest.approx(ahead, abs=0.02) and np.all(left[1:] == spec.corridor_length)
    assert np.all(corridor_lengths(spec, np.full(spec.scan_samples, np.inf), (1.0, 1.0)) == spec.corridor_length)
    rows = np.stack([observation(spec, ranges, None, (0.1, 0.0), goal)
                     for goal in np.random.default_rng(3).uniform(-3, 3, (300, 2))])
    actions = np.tile(np.array([[0.2, 0.1]], dtype=np.float32), (len(rows), 1))
    policy = train(rows, actions, spec, (0.4, 1.5), TrainConfig(hidden=(8,), epochs=1))
    export_onnx(policy, str(tmp_path / 'corridors.onnx'))
    runtime = PolicyRuntime(str(tmp_path / 'corridors.onnx'))
    assert runtime.spec == spec
    np.testing.assert_allclose(runtime.act_batch(rows[:10]), policy.act(rows[:10]), atol=1e-5)


def test_scan_convolutions_share_weights_over_bearings_and_export_as_dense_layers(tmp_path):
    """--scan-conv: the trained network's convolutions over the scan, exported as dense layers, are circular and
    the same at every bearing (the scan turned by two sectors turns the first layer's output by one position); the
    exported layers compute what training's convolutions did (the validation loss again in NumPy), and onnxruntime
    what NumPy does; shapes that do not fit are refused naming the field."""
    from robotsim_learning.policy_model import _split
    x, y = synthetic(600, seed=6)
    config = TrainConfig(hidden=(16,), epochs=5, batch_size=64, seed=2, scan_conv=(4, 8))
    policy = train(x, y, SPEC, (0.4, 1.5), config)
    sectors, rest = SPEC.sectors, SPEC.size - SPEC.sectors
    assert policy.report['scan_conv'] == [4, 8] and np.all(policy.mean[:sectors] == policy.mean[0])
    weights, bias = policy.layers[0]
    assert weights.shape == (SPEC.size, sectors // 2 * 4 + 2 * rest)
    first = np.maximum(((x[:8] - policy.mean) / policy.std) @ weights + bias, 0.0)
    turned = x[:8].copy()
    turned[:, :sectors] = np.roll(x[:8, :sectors], 2, axis=1)
    turned_first = np.maximum(((turned - policy.mean) / policy.std) @ weights + bias, 0.0)
    conv = first[:, :sectors // 2 * 4].reshape(8, sectors // 2, 4)
    np.testing.assert_allclose(turned_first[:, :sectors // 2 * 4].reshape(8, sectors // 2, 4),
                               np.roll(conv, 1, axis=1), atol=1e-5)
    assert np.allclose(turned_first[:, sectors // 2 * 4:], first[:, sectors // 2 * 4:])  # the rest passes beside
    _, validation = _split(len(x), None, config.validation_fraction, np.random.default_rng(config.seed))
    numpy_loss = np.mean(((policy.act(x[validation]) - y[validation]) / policy.action_scale) ** 2)
    assert numpy_loss == pytest.approx(policy.report['validation_loss'], rel=1e-4)
    path = tmp_path / 'conv.onnx'
    export_onnx(policy, str(path))
    np.testing.assert_allclose(PolicyRuntime(str(path)).act_batch(x[:32]), policy.act(x[:32]), atol=1e-5)
    with pytest.raises(ValueError, match=r'scan_conv: expected a scan whose sectors \(36\) .* divisible by 8'):
        train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(16,), epochs=1, scan_conv=(4, 4, 4)))
    with pytest.raises(ValueError, match=r'scan_conv: expected 1 to 4 comma-separated channel counts'):
        train(x, y, SPEC, (0.4, 1.5), TrainConfig(hidden=(16,), epochs=1, scan_conv=(0,)))
