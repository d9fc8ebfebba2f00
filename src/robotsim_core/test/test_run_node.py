"""How every robotsim node starts and stops (robotsim_core.ros.common.run_node): stopped by Ctrl-C or
SIGTERM while it is still being made (a launch shutting down because another node failed), a node
exits 0 without a traceback, also when the interrupt hits inside a ctypes call (OpenGL set-up
reports it as ctypes.ArgumentError); any other error while making it still shows."""

import pytest

from workspace_setup import run_python

SCRIPT = '''
import ctypes, sys
from robotsim_core.ros.common import run_node

def make_node():
    raise {error}

sys.exit(run_node('probe', make_node, (ValueError,), ['probe']))
'''


@pytest.mark.parametrize('error, status, shows', [
    ('KeyboardInterrupt()', 0, ''),
    ("ctypes.ArgumentError('argument 1: KeyboardInterrupt: ')", 0, ''),
    ("ValueError('bad value')", 2, 'probe: error: bad value'),
    ("ctypes.ArgumentError('argument 1: wrong type')", 1, 'ctypes.ArgumentError: argument 1: wrong type'),
])
def test_a_node_stopped_while_it_is_made_exits_quietly(tmp_path, error, status, shows):
    script = tmp_path / 'probe.py'
    script.write_text(SCRIPT.format(error=error))
    completed = run_python(script, check=False)
    assert completed.returncode == status, completed
    if shows:
        assert shows in completed.stderr
    else:
        assert completed.stderr.strip() == '', completed.stderr


SPINNING = '''
import sys
import rclpy
from rclpy.node import Node
from robotsim_core.ros.common import run_node

def run(node):
    if {shut_down}:
        rclpy.shutdown()  # what rclpy's signal handler does at Ctrl-C, before the spin notices
    raise RuntimeError("Unable to convert call argument '0' to Python object")

sys.exit(run_node('probe', lambda: Node('probe'), (ValueError,), ['probe'], run=run))
'''


@pytest.mark.parametrize('shut_down, status', [(True, 0), (False, 1)], ids=['after a signal', 'context valid'])
def test_an_error_of_the_spin_after_the_context_was_shut_down_is_a_normal_stop(tmp_path, shut_down, status):
    """Ctrl-C shuts the context down while the executor takes a message: rclpy's binding then raises
    RuntimeError; that is the stop, not a failure (exit 0, no traceback). The same error otherwise shows."""
    script = tmp_path / 'spinning.py'
    script.write_text(SPINNING.format(shut_down=shut_down))
    completed = run_python(script, check=False)
    assert completed.returncode == status, completed
    assert ('Traceback' in completed.stderr) == (status != 0), completed.stderr
