"""The core stays ROS-free: no module of robotsim_core imports rclpy or ROS message packages,
except its ROS adapters (ros_*.py: shared ROS helpers, the contract probe), which only ROS entry
points import (lazily, as the CLI does)."""

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / 'src' / 'robotsim_core' / 'robotsim_core'
ROS_ROOTS = {'rclpy', 'builtin_interfaces', 'std_msgs', 'geometry_msgs', 'sensor_msgs', 'nav_msgs', 'tf2_msgs',
             'rosgraph_msgs', 'diagnostic_msgs', 'trajectory_msgs', 'robotsim_msgs', 'rcl_interfaces'}


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.add(('.' * node.level) + (node.module or ''))
    return modules


def test_core_is_ros_free():
    files = [p for p in CORE.rglob('*.py') if not p.name.startswith('ros_')]
    assert len(files) > 10
    for path in files:
        modules = imported_modules(path)
        ros = {m for m in modules if m.split('.')[0] in ROS_ROOTS}
        assert not ros, f'{path.relative_to(CORE)} imports ROS: {sorted(ros)}'
        adapters = {m for m in modules if m.split('.')[-1].startswith('ros_')}
        # the CLI imports the probe inside its command function only
        assert not adapters or path.name == 'cli.py', f'{path.relative_to(CORE)} imports {adapters}'
