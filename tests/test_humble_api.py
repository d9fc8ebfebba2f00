"""Humble's API guarded: every rclpy, launch and launch_ros name the nodes and launch files import or reach, every
keyword they pass to those APIs' classes, functions and Node methods, every logger method, and every interface
(message, service, action), constructor field and constant they use exists in ROS 2 Humble, read from the upstream
sources' humble branches (tests/data/humble_api.json, written by scripts/humble_api_snapshot.py: the commits are
in the file). What Humble lacks or spells differently is used only behind a fallback (a ``try`` that catches the
ImportError, AttributeError or TypeError, or an ``if hasattr(...)``) and is listed in HUMBLE_GAPS with that
fallback; the list must match what the scan finds, so it cannot go stale.

Not covered by this scan (no types at hand): fields read from message instances, and methods of objects the
rclpy APIs return other than the node's own, its logger and its clock."""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

WORKSPACE = Path(__file__).resolve().parents[1]
SNAPSHOT = json.loads((WORKSPACE / 'tests' / 'data' / 'humble_api.json').read_text())
MODULES, INTERFACES = SNAPSHOT['modules'], SNAPSHOT['interfaces']
TRACKED = ('rclpy', 'launch', 'launch_ros')
INTERFACE_PACKAGES = {name.split('/')[0] for name in INTERFACES}

NODE_ONLY_METHODS = frozenset({
    'create_subscription', 'create_publisher', 'create_timer', 'create_client', 'create_service',
    'create_guard_condition', 'create_rate', 'declare_parameter', 'declare_parameters', 'get_parameter_or',
    'has_parameter', 'count_publishers', 'count_subscribers', 'get_publishers_info_by_topic',
    'get_subscriptions_info_by_topic', 'get_topic_names_and_types', 'get_node_names_and_namespaces',
    'get_fully_qualified_name', 'destroy_subscription', 'destroy_publisher', 'destroy_timer', 'destroy_node'})
"""rclpy Node methods no other class in robotsim has: a call of one on any receiver is a call on a node."""



def _newer_only_fields() -> dict[str, list[str]]:
    """Field name -> the interfaces whose installed (newer) definition has it and Humble's does not."""
    import importlib
    found: dict[str, list[str]] = {}
    for key, humble in INTERFACES.items():
        package, kind, name = key.split('/')
        try:
            cls = getattr(importlib.import_module(f'{package}.{kind}'), name)
        except (ImportError, AttributeError):
            continue
        parts = ([cls] if kind == 'msg' else [cls.Request, cls.Response] if kind == 'srv'
                 else [cls.Goal, cls.Result, cls.Feedback])
        for part, section in zip(parts, humble):
            for field in part.get_fields_and_field_types():
                if field not in section['fields']:
                    found.setdefault(field, []).append(key)
    return found


NEWER_ONLY_FIELDS = _newer_only_fields()
"""What the installed distribution's interfaces have that Humble's lack (checked on assignments to them)."""

HUMBLE_GAPS: dict[str, str] = {
    'module rclpy.event_handler': 'robotsim_core.ros.distro: SubscriptionEventCallbacks from rclpy.qos_event (the '
                                  'module before its rename in Iron)',
    'field index (control_msgs/action/FollowJointTrajectory)': 'set only where the message has it (hasattr)',
    'field speed_scaling_factor (control_msgs/msg/JointTrajectoryControllerState)': 'set only where the message has '
                                                                                   'it; on Humble desired and actual '
                                                                                   'are filled instead',
    'module rclpy.parameter_client': 'robotsim_core.ros.distro.parameter_client: GetParametersClient calls the node\'s '
                                     'get_parameters service (AsyncParameterClient came in Iron)',
}
"""What the nodes use that Humble lacks or spells differently -> the fallback the code takes there."""


@dataclass(frozen=True)
class Finding:
    what: str
    where: str
    guarded: bool


def sources() -> list[Path]:
    files = [p for p in (WORKSPACE / 'src').rglob('*.py')
             if not {'test', 'build', 'install'} & set(p.relative_to(WORKSPACE / 'src').parts)]
    return sorted(files) + sorted((WORKSPACE / 'launch').glob('*.py'))


def find_class(name: str, module: str | None = None) -> dict | None:
    """A class of the snapshot by name, in ``module`` first, else anywhere."""
    if module is not None and name in MODULES.get(module, {}).get('classes', {}):
        return MODULES[module]['classes'][name]
    for api in MODULES.values():
        if name in api['classes']:
            return api['classes'][name]
    return None


def class_member(cls: dict, name: str, depth: int = 0):
    """('method', parameters) | ('attribute', None) | None, following base classes found in the snapshot."""
    if name in cls['methods']:
        return 'method', cls['methods'][name]
    if name in cls['attributes']:
        return 'attribute', None
    for base in cls['bases']:
        found = find_class(base.split('.')[-1])
        if found is not None and depth < 8 and (member := class_member(found, name, depth + 1)):
            return member
    return None


def init_parameters(cls: dict) -> dict | None:
    member = class_member(cls, '__init__')
    return member[1] if member else None


def keywords_missing(parameters: dict | None, call: ast.Call) -> list[str]:
    if parameters is None or parameters['varkw']:
        return []
    return [k.arg for k in call.keywords if k.arg is not None and k.arg not in parameters['names']]


class Scanner(ast.NodeVisitor):
    """Collects one file's uses of Humble's API and whether each sits behind a fallback."""

    def __init__(self, path: Path, root: Path = WORKSPACE):
        self.path = path.relative_to(root)
        self.findings: list[Finding] = []
        self.checked = 0
        """Uses looked up in the snapshot (names, attributes, node and logger calls)."""
        self.aliases: dict[str, tuple[str, str | None]] = {}  # local name -> (module, name in it | None)
        self.guards = 0
        self.node_classes: list[set[str]] = []  # per enclosing Node subclass: its own method names

    # ---------------------------------------------------------------- recording
    def report(self, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(what, f'{self.path}:{node.lineno}', self.guards > 0))

    def visit(self, node: ast.AST):
        if isinstance(node, (ast.Name, ast.Attribute)) and self.resolve(node) is not None:
            self.checked += 1
        return super().visit(node)

    # ---------------------------------------------------------------- guards
    def visit_Try(self, node: ast.Try) -> None:
        caught = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
        guarded = any(name in text for text in caught for name in ('ImportError', 'AttributeError', 'TypeError',
                                                                    'ModuleNotFoundError'))
        self.guards += guarded
        for statement in node.body:
            self.visit(statement)
        self.guards -= guarded
        for part in (*node.handlers, *node.orelse, *node.finalbody):
            self.visit(part)

    def visit_If(self, node: ast.If) -> None:
        guarded = 'hasattr(' in ast.unparse(node.test) or 'ROS_DISTRO' in ast.unparse(node.test)
        self.visit(node.test)
        self.guards += guarded
        for statement in node.body:
            self.visit(statement)
        self.guards -= guarded
        for statement in node.orelse:
            self.visit(statement)

    # ---------------------------------------------------------------- imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            root = alias.name.split('.')[0]
            if root in TRACKED:
                if alias.name not in MODULES:
                    self.report(node, f'module {alias.name}')
                self.aliases[alias.asname or root] = (alias.asname and alias.name or root, None)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ''
        root = module.split('.')[0]
        if root in TRACKED:
            if module not in MODULES:
                self.report(node, f'module {module}')
                return
            for alias in node.names:
                if alias.name in MODULES[module]['names']:
                    self.aliases[alias.asname or alias.name] = (module, alias.name)
                elif f'{module}.{alias.name}' in MODULES:
                    self.aliases[alias.asname or alias.name] = (f'{module}.{alias.name}', None)
                else:
                    self.report(node, f'{module}.{alias.name}')
        elif root in INTERFACE_PACKAGES and len(module.split('.')) == 2:
            kind = module.split('.')[1]
            for alias in node.names:
                key = f'{root}/{kind}/{alias.name}'
                if key not in INTERFACES:
                    self.report(node, f'interface {key}')
                else:
                    self.aliases[alias.asname or alias.name] = ('interface', key)

    # ---------------------------------------------------------------- classes deriving from Node
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        is_node = any(self.resolve(base) == ('class', 'rclpy.node', 'Node') for base in node.bases)
        if is_node:
            own = {item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
            self.node_classes.append(own)
        self.generic_visit(node)
        if is_node:
            self.node_classes.pop()

    # ---------------------------------------------------------------- names and attributes
    def resolve(self, expr: ast.expr):
        """What ``expr`` names in the snapshot: ('module', m) | ('class', m, name) | ('value', m, name) |
        ('interface', key, section) | ('missing', text) | None (not tracked)."""
        if isinstance(expr, ast.Name):
            if expr.id not in self.aliases:
                return None
            module, name = self.aliases[expr.id]
            if module == 'interface':
                return 'interface', name, 0
            if name is None:
                return 'module', module
            return ('class', module, name) if name in MODULES[module]['classes'] else ('value', module, name)
        if isinstance(expr, ast.Attribute):
            base = self.resolve(expr.value)
            if base is None:
                return None
            kind = base[0]
            if kind == 'module':
                module = base[1]
                if f'{module}.{expr.attr}' in MODULES:
                    return 'module', f'{module}.{expr.attr}'
                if expr.attr in MODULES[module]['classes']:
                    return 'class', module, expr.attr
                if expr.attr in MODULES[module]['names']:
                    return 'value', module, expr.attr
                return 'missing', f'{module}.{expr.attr}'
            if kind == 'class':
                cls = find_class(base[2], base[1])
                member = class_member(cls, expr.attr) if cls else None
                if member is None:
                    return 'missing', f'{base[1]}.{base[2]}.{expr.attr}'
                return 'value', base[1], f'{base[2]}.{expr.attr}'
            if kind == 'interface':
                sections = INTERFACES[base[1]]
                if expr.attr in ('Goal', 'Result', 'Feedback', 'Request', 'Response') and len(sections) > 1:
                    index = {'Goal': 0, 'Request': 0, 'Result': 1, 'Response': 1, 'Feedback': 2}[expr.attr]
                    return 'interface', base[1], index
                if expr.attr.isupper() or expr.attr[:1].isupper() and '_' in expr.attr:
                    if expr.attr not in sections[base[2]]['constants']:
                        return 'missing', f'{base[1]}.{expr.attr}'
                return None
        return None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        imported = {key for module, key in self.aliases.values() if module == 'interface'}
        if isinstance(node.ctx, ast.Store) and imported & set(NEWER_ONLY_FIELDS.get(node.attr, ())) \
                and ast.unparse(node.value) not in ('self', 'cls'):
            self.report(node, f'field {node.attr} ({", ".join(NEWER_ONLY_FIELDS[node.attr])})')
        resolved = self.resolve(node)
        if resolved is not None and resolved[0] == 'missing':
            self.report(node, resolved[1])
            return  # (its parts are the same gap)
        self.generic_visit(node)

    # ---------------------------------------------------------------- calls
    def visit_Call(self, node: ast.Call) -> None:
        target = self.resolve(node.func)
        if target is not None:
            if target[0] == 'class':
                cls = find_class(target[2], target[1])
                for keyword in keywords_missing(init_parameters(cls) if cls else None, node):
                    self.report(node, f'{target[1]}.{target[2]}(..., {keyword}=)')
            elif target[0] == 'interface':
                fields = INTERFACES[target[1]][target[2]]['fields']
                for keyword in node.keywords:
                    if keyword.arg is not None and keyword.arg not in fields:
                        self.report(node, f'{target[1]} field {keyword.arg}')
        func = node.func
        if isinstance(func, ast.Attribute):
            # The node's own API: self.<Node method>(...) in a Node subclass, super().__init__(...).
            node_class = find_class('Node', 'rclpy.node')
            receiver = ast.unparse(func.value)
            on_a_node = func.attr in NODE_ONLY_METHODS and not (self.node_classes and func.attr in self.node_classes[-1])
            if on_a_node or self.node_classes and (receiver == 'self' and func.attr not in self.node_classes[-1]
                                                   or receiver == 'super()' and func.attr == '__init__'):
                self.checked += 1
                member = class_member(node_class, func.attr)
                if member is None and receiver == 'self' and func.attr.startswith(('create_', 'declare_', 'get_',
                                                                                   'destroy_', 'set_', 'count_')):
                    self.report(node, f'rclpy.node.Node.{func.attr}')
                elif member is not None and member[0] == 'method':
                    for keyword in keywords_missing(member[1], node):
                        self.report(node, f'rclpy.node.Node.{func.attr}(..., {keyword}=)')
            # The logger's methods: <anything>.get_logger().<method>(...)
            if isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Attribute) \
                    and func.value.func.attr == 'get_logger':
                self.checked += 1
                logger = find_class('RcutilsLogger', 'rclpy.impl.rcutils_logger')
                if class_member(logger, func.attr) is None:
                    self.report(node, f'rclpy.impl.rcutils_logger.RcutilsLogger.{func.attr}')
        self.generic_visit(node)


def scan(counts: dict | None = None) -> list[Finding]:
    findings = []
    for path in sources():
        scanner = Scanner(path)
        scanner.visit(ast.parse(path.read_text(), str(path)))
        findings += scanner.findings
        if counts is not None and scanner.checked:
            counts[str(scanner.path)] = scanner.checked
    return findings


def test_the_snapshot_is_humble_s_own():
    assert SNAPSHOT['branch'] == 'humble'
    assert set(SNAPSHOT['sources']) >= {'ros2/rclpy', 'ros2/launch', 'ros2/launch_ros', 'ros2/common_interfaces'}
    # Facts of Humble that later distros changed: the scan must see them, or it checks nothing.
    assert 'rclpy.event_handler' not in MODULES and 'rclpy.qos_event' in MODULES  # renamed in Iron
    assert 'get_type_description' not in str(MODULES['rclpy.node'])  # type descriptions: Iron and later
    node = MODULES['rclpy.node']['classes']['Node']['methods']
    assert 'create_timer' in node and 'clock' in node['create_timer']['names']


def test_the_scan_notices_what_humble_lacks(tmp_path):
    """The scanner itself: a file using Iron's names and a message field Humble lacks is reported (written outside
    the workspace: a file appearing in it would make the next set-up rebuild)."""
    probe = tmp_path / '_humble_probe.py'
    probe.write_text('from rclpy.event_handler import SubscriptionEventCallbacks\n'
                     'import rclpy.qos\n'
                     'from sensor_msgs.msg import Imu\n'
                     'from rclpy.node import Node\n'
                     'x = rclpy.qos.QoSPolicyKind.INVALID\n'
                     'Imu(no_such_field=1)\n'
                     'class N(Node):\n'
                     '    def __init__(self):\n'
                     '        super().__init__("n", no_such_option=True)\n'
                     '        self.get_logger().whisper("x")\n'
                     'from sensor_msgs.msg import Range\n'
                     'r = Range()\n'
                     'r.variance = 0.1\n'
                     'if hasattr(r, "variance"):\n'
                     '    r.variance = 0.2\n'
                     'try:\n'
                     '    from rclpy.type_description_service import TypeDescriptionService\n'
                     'except ImportError:\n'
                     '    TypeDescriptionService = None\n')
    scanner = Scanner(probe, tmp_path)
    scanner.visit(ast.parse(probe.read_text()))
    findings = {(f.what, f.guarded) for f in scanner.findings}
    expected = {('module rclpy.event_handler', False), ('sensor_msgs/msg/Imu field no_such_field', False),
                ('rclpy.node.Node.__init__(..., no_such_option=)', False),
                ('rclpy.impl.rcutils_logger.RcutilsLogger.whisper', False),
                ('module rclpy.type_description_service', True)}
    if 'variance' in NEWER_ONLY_FIELDS:  # (Range.variance came in Jazzy)
        expected |= {('field variance (sensor_msgs/msg/Range)', False), ('field variance (sensor_msgs/msg/Range)', True)}
    if 'INVALID' not in str(MODULES['rclpy.qos']):
        expected.add(('rclpy.qos.QoSPolicyKind.INVALID', False))
    assert findings == expected


def test_every_api_the_nodes_use_is_in_humble_or_behind_a_fallback():
    counts = {}
    findings = scan(counts)
    # The nodes, the launcher and the launch files are all looked at (a scan that resolves nothing checks nothing).
    for node in ('robotsim_sim/robotsim_sim/ros/sim_node.py', 'robotsim_firmware/robotsim_firmware/ros/bridge_node.py',
                 'robotsim_learning/robotsim_learning/ros/viewer_node.py', 'robotsim/robotsim/ros/launch_adapter.py'):
        assert counts.get(f'src/{node}', 0) >= 5, (node, counts.get(f'src/{node}'))
    assert sum(counts.values()) > 400, sum(counts.values())
    unguarded = [f'{f.where}: {f.what}' for f in findings if not f.guarded]
    assert not unguarded, 'not in ROS 2 Humble and not behind a fallback:\n' + '\n'.join(unguarded)
    assert {f.what for f in findings} == set(HUMBLE_GAPS), 'HUMBLE_GAPS must list exactly the guarded gaps'


def test_the_humble_parameter_client_reads_what_rclpy_s_own_reads():
    """robotsim_core.ros.distro's fallback for Humble (the get_parameters service called directly) returns the same
    values as Iron's AsyncParameterClient, against a live node (in this process, on this test's domain)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import parameter_value_to_python

    from robotsim_core.ros.distro import GetParametersClient, parameter_client

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        owner = rclpy.create_node('humble_api_owner', context=context)
        owner.declare_parameter('world', 'room')
        owner.declare_parameter('seed', 7)
        asker = rclpy.create_node('humble_api_asker', context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(owner)
        executor.add_node(asker)
        read = []
        for humble in (False, True):
            client = parameter_client(asker, '/humble_api_owner', humble=humble)
            assert isinstance(client, GetParametersClient) == humble
            assert client.wait_for_services(timeout_sec=30.0)
            future = client.get_parameters(['world', 'seed'])
            executor.spin_until_future_complete(future, timeout_sec=30.0)
            read.append([parameter_value_to_python(value) for value in future.result().values])
        assert read == [['room', 7], ['room', 7]]
        executor.shutdown()
    finally:
        rclpy.shutdown(context=context)


def test_the_launch_files_node_options_are_humble_s():
    """The launch adapter builds launch_ros Node actions from a dict (node_kwargs) the scan cannot follow: each of its
    keys must be a parameter of Humble's Node or of the actions it passes its other keywords to (ExecuteProcess,
    ExecuteLocal)."""
    path = WORKSPACE / 'src' / 'robotsim' / 'robotsim' / 'ros' / 'launch_adapter.py'
    tree = ast.parse(path.read_text())
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == 'node_kwargs')
    keys = {k.value for n in ast.walk(function) if isinstance(n, ast.Dict) for k in n.keys
            if isinstance(k, ast.Constant)}
    keys |= {n.slice.value for n in ast.walk(function) if isinstance(n, ast.Subscript)
             and isinstance(n.slice, ast.Constant) and isinstance(n.ctx, ast.Store)}
    keys |= {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == 'Node'
             for k in n.keywords if k.arg}
    assert {'package', 'executable', 'parameters', 'exec_name'} <= keys, keys
    accepted = set()
    for module, cls in (('launch_ros.actions.node', 'Node'), ('launch.actions.execute_process', 'ExecuteProcess'),
                        ('launch.actions.execute_local', 'ExecuteLocal')):
        accepted |= set(MODULES[module]['classes'][cls]['methods']['__init__']['names'])
    assert keys <= accepted, keys - accepted
