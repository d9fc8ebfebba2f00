"""A reset of a running simulator node (sim/reset): the ending episode's images still rendering are
published, the new episode's stamps follow every stamp sent before (status too, not only /clock),
the measured real-time factor does not go negative, and ``duration`` counts the sim time of the
whole run, across resets. The node runs in a subprocess (sim_node_reset_probe.py), driven step by
step, so each case happens at the same step every time."""

import json
from pathlib import Path

import yaml

from workspace_setup import WORKSPACE, run_python


def test_a_reset_loses_no_image_and_keeps_stamps_going_forward():
    result = json.loads(run_python(Path(__file__).with_name('sim_node_reset_probe.py'), timeout=300).stdout
                        .strip().splitlines()[-1])
    assert result['images_out_at_reset'] == [1] * 6, 'the image in flight at the reset was lost'
    gaps = result['new_episode_start_after_time_reached_ns']
    assert len(gaps) == 6 and min(gaps) > 0, f'the new episode starts at or before a stamp already sent: {gaps}'
    assert result['real_time_factor_after_reset'] >= 0.0
    assert result['clock_at_end_of_run_ns'] == 2_000_000_000, result
    assert result['clock_at_last_reset_ns'] > 0


def test_every_setpoint_period_is_synced_once_across_resets():
    """The firmware's lockstep links wait for the motor bridge's setpoint at the start of every setpoint period
    (robotsim_firmware.virtual_serial): an episode reset whose new start falls on a period's start gets that period's
    sync before its first step, as t = 0 does; none is synced twice."""
    result = json.loads(run_python(Path(__file__).with_name('sim_node_sync_probe.py'), timeout=300).stdout
                        .strip().splitlines()[-1])
    period = result['period_ns']
    assert result['lockstep'] and result['reset_onto_period_start_ns'] == 2 * period, result
    assert result['synced_periods'] == list(range(result['reached_ns'] // period + 1)), result


def test_a_timestep_that_does_not_divide_the_setpoint_period_is_warned_of_and_synced_where_they_meet(tmp_path):
    """A world timestep of 3 ms against the bridges' 20 ms setpoint period: the node says so in one warning at start,
    and the links sync only where a period starts on a physics step (every 60 ms: periods 0, 3, 6 in 150 ms)."""
    world = yaml.safe_load((WORKSPACE / 'config' / 'worlds' / 'room.yaml').read_text())
    world['timestep'] = 0.003
    path = tmp_path / 'room_3ms.yaml'
    path.write_text(yaml.safe_dump(world))
    completed = run_python(Path(__file__).with_name('sim_node_sync_probe.py'), str(path), timeout=300)
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result == {'synced_periods': [0, 3, 6], 'timestep_ns': 3_000_000}, result
    warnings = [line for line in completed.stderr.splitlines() if 'firmware lockstep: the world timestep' in line]
    assert len(warnings) == 1 and '(0.003 s) does not divide the bridge\'s 20 ms setpoint period' in warnings[0], \
        completed.stderr
