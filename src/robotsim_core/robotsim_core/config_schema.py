"""Strict YAML -> dataclass conversion shared by every robotsim config file.

Each config is a tree of dataclasses; this module walks the type hints so that an unknown key,
a wrong type, a missing required key or a value outside its range is reported once, naming the
file, the key path (``arms[0].joints[2].lower``) and what was expected.

Range checks come from field metadata: ``positive`` (> 0), ``non_negative`` (>= 0),
``at_least`` (>= value), ``at_most`` (<= value), ``non_empty`` (lists).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import MISSING, field
from typing import Any, Literal, Union

import yaml

from .errors import DescriptionError


def spec_field(default=MISSING, *, positive=False, non_negative=False, at_least=None, at_most=None,
               non_empty=False, default_factory=MISSING):
    """A dataclass field carrying the range rules checked by :func:`parse_spec`."""
    metadata = {'positive': positive, 'non_negative': non_negative, 'at_least': at_least,
                'at_most': at_most, 'non_empty': non_empty}
    if default_factory is not MISSING:
        return field(default_factory=default_factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def load_yaml(path: str) -> Any:
    try:
        with open(path, encoding='utf-8') as stream:
            return yaml.safe_load(stream)
    except FileNotFoundError:
        raise DescriptionError(path, '', 'file not found') from None
    except yaml.YAMLError as error:
        raise DescriptionError(path, '', f'expected valid YAML: {error}') from None


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f'{path}[{key}]'
    return f'{path}.{key}' if path else key


def _describe(value: Any) -> str:
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


def _check_range(value: float, metadata: dict, source: str, path: str) -> None:
    kind = 'an integer' if isinstance(value, int) else 'a number'
    rules = (('positive', lambda v, _: v > 0, '> 0'), ('non_negative', lambda v, _: v >= 0, '>= 0'),
             ('at_least', lambda v, bound: v >= bound, '>= {:.6g}'), ('at_most', lambda v, bound: v <= bound, '<= {:.6g}'))
    for key, holds, text in rules:
        bound = metadata.get(key)
        if bound not in (None, False) and not holds(value, bound):
            raise DescriptionError(source, path, f'expected {kind} {text.format(bound)}, got {_describe(value)}')


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
        tagged = {typing.get_args(typing.get_type_hints(option)['type'])[0]: option
                  for option in options if dataclasses.is_dataclass(option)
                  and typing.get_origin(typing.get_type_hints(option).get('type')) is Literal}
        if tagged and len(tagged) == len(options):
            # A tagged union (e.g. sensors): the 'type' key picks the dataclass.
            if not isinstance(value, dict):
                raise DescriptionError(source, path, f'expected a mapping, got {_describe(value)}')
            if value.get('type') not in tagged:
                raise DescriptionError(source, _join(path, 'type'),
                                       f'expected one of {", ".join(map(repr, tagged))}, got {_describe(value.get("type"))}')
            return parse_spec(tagged[value['type']], value, source, path)
        # Choose the alternative by the value's shape (a mapping vs a list).
        for option in options:
            option_origin = typing.get_origin(option)
            if isinstance(value, dict) and (dataclasses.is_dataclass(option) or option_origin is dict):
                return _parse_value(option, value, source, path, metadata)
            if isinstance(value, list) and option_origin is list:
                return _parse_value(option, value, source, path, metadata)
        raise DescriptionError(source, path, 'expected ' + ' or '.join(_type_name(o) for o in options)
                               + f', got {_describe(value)}')
    if dataclasses.is_dataclass(hint):
        return parse_spec(hint, value, source, path)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DescriptionError(source, path, f'expected a number, got {_describe(value)}')
        if not math.isfinite(value):
            raise DescriptionError(source, path, f'expected a finite number, got {_describe(value)}')
        _check_range(float(value), metadata, source, path)
        return float(value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise DescriptionError(source, path, f'expected an integer, got {_describe(value)}')
        _check_range(value, metadata, source, path)
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise DescriptionError(source, path, f'expected true or false, got {_describe(value)}')
        return value
    if hint is str:
        if not isinstance(value, str) or not value:
            raise DescriptionError(source, path, f'expected a non-empty string, got {_describe(value)}')
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
        return [_parse_value(item, element, source, _join(path, index), {}) for index, element in enumerate(value)]
    if origin is dict:
        key_type, value_type = typing.get_args(hint)
        if not isinstance(value, dict):
            raise DescriptionError(source, path, f'expected a mapping, got {_describe(value)}')
        return {_parse_value(key_type, key, source, path, {}): _parse_value(value_type, element, source, _join(path, key), {})
                for key, element in value.items()}
    raise TypeError(f'config_schema: unsupported type hint {hint!r} at {path}')


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
