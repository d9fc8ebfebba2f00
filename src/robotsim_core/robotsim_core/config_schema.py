"""Strict YAML -> dataclass conversion shared by every robotsim config file.

Each config is a tree of dataclasses; this module walks the type hints so that an unknown key,
a wrong type, a missing required key or a value outside its range is reported once, naming the
file, the key path (``arms[0].joints[2].lower``) and what was expected.

Range checks come from field metadata: ``positive`` (> 0), ``non_negative`` (>= 0),
``at_least`` (>= value), ``at_most`` (<= value), ``non_empty`` (lists), ``pattern`` (strings).
Every number must also be finite and within +-:data:`MAX_MAGNITUDE`: nothing in a robot, world or
fleet is a million metres, kilograms or hertz, and such values only make the physics blow up.

:func:`load_yaml` reads numbers as a user means them (YAML 1.2: ``1e9``, ``1.0e9``, ``1E-3``, ``.5``,
``+3`` are numbers, ``010`` is ten, ``1:20`` is not 80) and refuses a key given twice in a mapping.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import types
import typing
from dataclasses import MISSING, field
from typing import Any, Literal, Union

import yaml

from .errors import DescriptionError


MAX_MAGNITUDE = 1e6
"""Largest absolute value of any number in a config file (see the module docstring)."""
MAX_LIST_ITEMS = 256
"""Items a list in a config file may hold (walls, boxes, sensors, joints, ...): checked before any item is
built; a world of 256 boxes or a robot of 256 sensors is far beyond what the simulator is made for."""
MAX_CONFIG_BYTES = 256 * 1024
"""Config files are hand-written or generated YAML of a few kB (the largest shipped one: 4 kB); anything bigger
is the wrong file. Parsing is about 4 s per MB (Python builds every value), so the bound also keeps a refusal
within about a second."""


def spec_field(default=MISSING, *, positive=False, non_negative=False, at_least=None, at_most=None,
               non_empty=False, pattern=None, default_factory=MISSING):
    """A dataclass field carrying the range rules checked by :func:`parse_spec`.

    ``pattern``: ``(regular expression, what it means)`` that a string must match in full."""
    metadata = {'positive': positive, 'non_negative': non_negative, 'at_least': at_least,
                'at_most': at_most, 'non_empty': non_empty, 'pattern': pattern}
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata=metadata)
    return field(default=default, metadata=metadata)


class _ConfigLoader(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 numbers and no silently repeated keys; libyaml's parser (C) where
    PyYAML has it, so that a config file at the size limit is refused in well under 2 s."""


# YAML 1.1 (PyYAML) reads ``1e9`` and ``1.0e9`` as strings (its floats need a dot and a signed
# exponent), ``010`` as octal 8 and ``1:20`` as sexagesimal 80. Replace its int and float
# resolvers with YAML 1.2 core-schema ones (plus ``_`` between digits, as Python allows).
_ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers
            if tag not in ('tag:yaml.org,2002:int', 'tag:yaml.org,2002:float')]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_DIGITS = r'[0-9](?:_?[0-9])*'
_INT = re.compile(rf'^(?:[-+]?{_DIGITS}|0o[0-7]+|0x[0-9a-fA-F]+)$')
_FLOAT = re.compile(rf'^(?:[-+]?(?:\.{_DIGITS}|{_DIGITS}(?:\.(?:{_DIGITS})?)?)(?:[eE][-+]?{_DIGITS})?'
                    r'|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$')
_ConfigLoader.add_implicit_resolver('tag:yaml.org,2002:int', _INT, list('-+0123456789'))
_ConfigLoader.add_implicit_resolver('tag:yaml.org,2002:float', _FLOAT, list('-+0123456789.'))


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node).replace('_', '')
    if len(text) > 100:  # Python refuses to convert thousands of digits; no config needs a hundred
        raise yaml.constructor.ConstructorError(None, None, f'integer with {len(text)} digits: expected a '
                                                            f'number within +-{MAX_MAGNITUDE:g}', node.start_mark)
    if text.startswith('0o'):
        return int(text[2:], 8)
    return int(text, 16) if text.startswith('0x') else int(text, 10)


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    text = loader.construct_scalar(node).replace('_', '').lower()
    if text.endswith(('.inf', '.nan')):
        return float(text.replace('.', ''))
    return float(text)


class DuplicateKey(Exception):
    def __init__(self, key_path: str, key: str, first_line: int, second_line: int):
        super().__init__(key_path)
        self.key_path, self.key, self.lines = key_path, key, (first_line, second_line)


def _check_duplicate_keys(node: yaml.Node, path: str = '', seen: set | None = None) -> None:
    """Raise :class:`DuplicateKey` for a key given twice in one mapping (PyYAML keeps the last)."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return  # an alias of a node already checked
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != 'tag:yaml.org,2002:merge':
                line = key_node.start_mark.line + 1
                if key_node.value in first_line:
                    raise DuplicateKey(_join(path, key_node.value), key_node.value, first_line[key_node.value], line)
                first_line[key_node.value] = line
            child = _join(path, key_node.value) if isinstance(key_node, yaml.ScalarNode) else path
            _check_duplicate_keys(value_node, child, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _check_duplicate_keys(item, _join(path, index), seen)


def parse_yaml_text(text: str) -> Any:
    """YAML text -> Python data with the config rules above (raises yaml.YAMLError, DuplicateKey)."""
    loader = _ConfigLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_duplicate_keys(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


_ConfigLoader.add_constructor('tag:yaml.org,2002:int', _construct_int)
_ConfigLoader.add_constructor('tag:yaml.org,2002:float', _construct_float)


def _yaml_problem(error: yaml.YAMLError) -> tuple[str, str]:
    """(where, what) of a YAML error, on one line: PyYAML's own text spans several."""
    mark = getattr(error, 'problem_mark', None) or getattr(error, 'context_mark', None)
    where = f'line {mark.line + 1}, column {mark.column + 1}' if mark is not None else ''
    if isinstance(error, yaml.reader.ReaderError):
        where = f'byte {error.position}'
        what = 'expected YAML text, found a control character or binary data'
    else:
        parts = [getattr(error, 'context', None), getattr(error, 'problem', None)]
        what = '; '.join(part for part in parts if part) or str(error)
    return where, ' '.join(what.split())


def load_yaml(path: str) -> Any:
    """Parse a config file; any reason it cannot be read is one :class:`DescriptionError` line."""
    if os.path.isdir(path):
        raise DescriptionError(path, '', 'expected a YAML file, got a directory')
    if os.path.exists(path) and not os.path.isfile(path):
        raise DescriptionError(path, '', 'expected a YAML file, got a device, pipe or socket')
    try:
        if os.path.getsize(path) > MAX_CONFIG_BYTES:
            raise DescriptionError(path, '', f'expected a YAML config file of at most {MAX_CONFIG_BYTES // 1024} KiB, '
                                             f'got {os.path.getsize(path)} bytes')
        with open(path, 'rb') as stream:
            raw = stream.read()
        text = raw.decode('utf-8')
        return parse_yaml_text(text)
    except FileNotFoundError:
        raise DescriptionError(path, '', 'file not found') from None
    except UnicodeDecodeError as error:
        raise DescriptionError(path, f'byte {error.start}', 'expected UTF-8 YAML text, got binary data') from None
    except OSError as error:
        raise DescriptionError(path, '', f'cannot read the file: {error.strerror or error}') from None
    except DuplicateKey as error:
        raise DescriptionError(path, error.key_path, f'key {error.key!r} is given twice (lines {error.lines[0]} '
                                                     f'and {error.lines[1]}): expected each key once') from None
    except yaml.YAMLError as error:
        where, what = _yaml_problem(error)
        raise DescriptionError(path, where, what if isinstance(error, yaml.reader.ReaderError)
                               else f'expected valid YAML: {what}') from None
    except RecursionError:
        raise DescriptionError(path, '', 'expected valid YAML: nested too deeply') from None


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f'{path}[{key}]'
    return f'{path}.{key}' if path else key


def _describe(value: Any) -> str:
    if isinstance(value, int) and abs(value) >= 10**60:
        return f'an integer of {len(str(abs(value)))} digits'
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + '...'


def _type_name(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if hint is float:
        return 'a number'
    if hint is int:
        return 'an integer'
    if hint is bool:
        return 'true or false'
    if hint is str:
        return 'a string'
    if origin is Literal:
        return 'one of ' + ', '.join(repr(choice) for choice in typing.get_args(hint))
    if origin in (list, tuple):
        return 'a list'
    if origin is dict or dataclasses.is_dataclass(hint):
        return 'a mapping'
    return str(hint)


MIN_POSITIVE = 1e-6
"""Smallest value of a ``positive`` number: below it a length, mass, rate or speed only feeds
divisions (damping = torque / speed, period = 1 / rate) that blow the physics up."""


def _check_range(value: float, metadata: dict, source: str, path: str, kind: str) -> None:
    if abs(value) > MAX_MAGNITUDE:
        low = metadata.get('at_least')
        low = 0 if low is None and (metadata.get('positive') or metadata.get('non_negative')) else low
        high = metadata.get('at_most')
        low = -MAX_MAGNITUDE if low is None else low
        high = MAX_MAGNITUDE if high is None else high
        raise DescriptionError(source, path, f'expected {kind} from {low:.6g} to {high:.6g}, got {_describe(value)}')
    rules = (('positive', lambda v, _: v > 0, '> 0'), ('non_negative', lambda v, _: v >= 0, '>= 0'),
             ('at_least', lambda v, bound: v >= bound, '>= {:.6g}'), ('at_most', lambda v, bound: v <= bound, '<= {:.6g}'))
    for key, holds, text in rules:
        bound = metadata.get(key)
        if bound not in (None, False) and not holds(value, bound):
            raise DescriptionError(source, path, f'expected {kind} {text.format(bound)}, got {_describe(value)}')
    if metadata.get('positive') and kind == 'a number' and value < MIN_POSITIVE and metadata.get('at_least') is None:
        raise DescriptionError(source, path, f'expected a number >= {MIN_POSITIVE:g} (smaller is no physical '
                                             f'size, mass, rate or speed here), got {_describe(value)}')


def _parse_value(hint: Any, value: Any, source: str, path: str, metadata: dict) -> Any:
    if hint is Any:
        return value  # free-form (a driver's own parameters): passed through as YAML gave it
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        options = [option for option in options if option is not type(None)]
        if len(options) == 1:
            return _parse_value(options[0], value, source, path, metadata)
        if all(_type_tag(option) is not None for option in options):
            return parse_tagged(options, value, source, path)
        # Choose the alternative by the value's shape (a mapping vs a list).
        for option in options:
            option_origin = typing.get_origin(option)
            if isinstance(value, dict) and (dataclasses.is_dataclass(option) or option_origin is dict):
                return _parse_value(option, value, source, path, metadata)
            if isinstance(value, list) and option_origin is list:
                return _parse_value(option, value, source, path, metadata)
        raise DescriptionError(source, path, 'expected ' + ' or '.join(_type_name(o) for o in options)
                               + f', got {_describe(value)}')
    parse_config = getattr(hint, '__parse_config__', None)
    if parse_config is not None:  # a type that parses itself (e.g. a sensor: the kinds installed decide)
        return parse_config(value, source, path)
    if dataclasses.is_dataclass(hint):
        return parse_spec(hint, value, source, path)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DescriptionError(source, path, f'expected a number, got {_describe(value)}')
        if isinstance(value, float) and not math.isfinite(value):
            raise DescriptionError(source, path, f'expected a finite number, got {_describe(value)}')
        _check_range(value, metadata, source, path, 'a number')  # before float(): 10**400 has no float
        return float(value)
    if hint is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # 1e3 or 4.0 where a count is expected: the user means the integer
        if isinstance(value, bool) or not isinstance(value, int):
            raise DescriptionError(source, path, f'expected an integer, got {_describe(value)}')
        _check_range(value, metadata, source, path, 'an integer')
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise DescriptionError(source, path, f'expected true or false, got {_describe(value)}')
        return value
    if hint is str:
        if not isinstance(value, str) or not value:
            raise DescriptionError(source, path, f'expected a non-empty string, got {_describe(value)}')
        if metadata.get('pattern') and not re.fullmatch(metadata['pattern'][0], value):
            raise DescriptionError(source, path, f'expected {metadata["pattern"][1]}, got {_describe(value)}')
        return value
    if origin is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise DescriptionError(source, path, f'expected {_type_name(hint)}, got {_describe(value)}')
        return value
    if origin is tuple:
        items = typing.get_args(hint)
        if not isinstance(value, (list, tuple)) or len(value) != len(items):
            raise DescriptionError(source, path, f'expected a list of {len(items)} numbers, got {_describe(value)}')
        return tuple(_parse_value(item, element, source, _join(path, index), metadata)
                     for index, (item, element) in enumerate(zip(items, value)))
    if origin is list:
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise DescriptionError(source, path, f'expected a list, got {_describe(value)}')
        if metadata.get('non_empty') and not value:
            raise DescriptionError(source, path, 'expected a non-empty list')
        most = metadata.get('max_items') or MAX_LIST_ITEMS
        if len(value) > most:
            raise DescriptionError(source, path, f'expected at most {most} items, got {len(value)}')
        return [_parse_value(item, element, source, _join(path, index), {}) for index, element in enumerate(value)]
    if origin is dict:
        key_type, value_type = typing.get_args(hint)
        if not isinstance(value, dict):
            raise DescriptionError(source, path, f'expected a mapping, got {_describe(value)}')
        return {_parse_value(key_type, key, source, path, {}): _parse_value(value_type, element, source, _join(path, key), {})
                for key, element in value.items()}
    raise TypeError(f'config_schema: unsupported type hint {hint!r} at {path}')


def _type_tag(option: Any) -> str | None:
    """The ``type: Literal['x']`` tag of a dataclass in a tagged union, else None."""
    if not dataclasses.is_dataclass(option):
        return None
    hint = typing.get_type_hints(option).get('type')
    return typing.get_args(hint)[0] if typing.get_origin(hint) is Literal else None


def parse_tagged(options: list[type], value: Any, source: str, path: str) -> Any:
    """A tagged union (e.g. sensors): the mapping's ``type`` key picks the dataclass among ``options``."""
    tagged = {_type_tag(option): option for option in options}
    if not isinstance(value, dict):
        raise DescriptionError(source, path, f'expected a mapping, got {_describe(value)}')
    if not isinstance(value.get('type'), str) or value.get('type') not in tagged:
        raise DescriptionError(source, _join(path, 'type'),
                               f'expected one of {", ".join(map(repr, tagged))}, got {_describe(value.get("type"))}')
    return parse_spec(tagged[value['type']], value, source, path)


def parse_spec(cls: type, data: Any, source: str, path: str = '') -> Any:
    """Build dataclass ``cls`` from parsed YAML ``data``; calls ``obj.check(source, path)`` if defined."""
    if not isinstance(data, dict):
        raise DescriptionError(source, path or '(top level)', f'expected a mapping, got {_describe(data)}')
    hints = typing.get_type_hints(cls)
    fields = {spec.name: spec for spec in dataclasses.fields(cls) if spec.init}
    for key in data:
        if key not in fields:
            raise DescriptionError(source, _join(path, str(key)),
                                   f'unknown key; expected one of: {", ".join(sorted(fields))}')
    kwargs = {}
    for name, spec in fields.items():
        if name in data:
            kwargs[name] = _parse_value(hints[name], data[name], source, _join(path, name), dict(spec.metadata))
        elif spec.default is MISSING and spec.default_factory is MISSING:
            raise DescriptionError(source, _join(path, name), f'missing required key ({_type_name(hints[name])})')
    obj = cls(**kwargs)
    check = getattr(obj, 'check', None)
    if check is not None:
        check(source, path)
    return obj


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a config dataclass (the convention of every spec here)."""
    import ast
    import inspect
    import textwrap
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for statement, following in zip(body, body[1:]):
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant) \
                and isinstance(following.value.value, str):
            docs[statement.target.id] = following.value.value.strip()
    return docs
