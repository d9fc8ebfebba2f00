"""The viewer page: one self-contained HTML file (replay) or the same page served live.

Everything the browser needs is inside the file: the page's own script and style (``web/``), the
vendored three.js modules (``web/vendor/three``, version and SHA-256 of each file in its
``VENDOR.json``, checked here before inlining), the scene as binary glTF and the scene data as JSON. No
request leaves the page (replay) or goes anywhere but the page's own server (live).

The modules are inlined through an import map whose entries are ``data:`` URLs. A module loaded from a
``data:`` URL cannot resolve relative imports, so each relative specifier (``./three.core.js``,
``../utils/BufferGeometryUtils.js``) is rewritten to a bare specifier naming the vendored file, which the
import map resolves; nothing else in the vendored files is changed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import posixpath
import re
from pathlib import Path

WEB = Path(__file__).resolve().parent / 'web'
VENDOR = WEB / 'vendor' / 'three'
ENTRY_MODULES = {
    'three': 'build/three.module.js',
    'three/addons/loaders/GLTFLoader.js': 'examples/jsm/loaders/GLTFLoader.js',
    'three/addons/controls/OrbitControls.js': 'examples/jsm/controls/OrbitControls.js',
}
"""Bare specifiers the page's script imports -> vendored files."""
RELATIVE_IMPORT = re.compile(r"""(\bfrom\s*|\bimport\s*\(?\s*)(['"])(\.{1,2}/[^'"]+)\2""")


class VendorError(RuntimeError):
    """A vendored file is missing or differs from its recorded SHA-256."""


def vendor_record() -> dict:
    return json.loads((VENDOR / 'VENDOR.json').read_text())


def _vendored(relative: str, record: dict) -> str:
    path = VENDOR / relative
    if not path.is_file():
        raise VendorError(f'{path}: vendored three.js file missing (reinstall robotsim_core)')
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != record['sha256'].get(relative):
        raise VendorError(f'{path}: SHA-256 differs from {VENDOR / "VENDOR.json"}')
    return data.decode('utf-8')


def _specifier(relative: str) -> str:
    """The bare specifier a vendored file is imported by."""
    for specifier, path in ENTRY_MODULES.items():
        if path == relative:
            return specifier
    return f'three-vendor/{relative}'


def import_map() -> dict:
    """``{"imports": {specifier: data URL}}`` of every vendored module the entry modules reach."""
    record = vendor_record()
    imports, pending = {}, list(ENTRY_MODULES.values())
    while pending:
        relative = pending.pop()
        if _specifier(relative) in imports:
            continue
        source = _vendored(relative, record)

        def rewrite(match: re.Match, base=posixpath.dirname(relative)) -> str:
            target = posixpath.normpath(posixpath.join(base, match.group(3)))
            pending.append(target)
            return f'{match.group(1)}{match.group(2)}{_specifier(target)}{match.group(2)}'

        source = RELATIVE_IMPORT.sub(rewrite, source)
        imports[_specifier(relative)] = ('data:text/javascript;base64,'
                                         + base64.b64encode(source.encode('utf-8')).decode('ascii'))
    return {'imports': dict(sorted(imports.items()))}


def _script_json(value) -> str:
    """JSON safe inside a <script> element (no ``</`` can close it)."""
    return json.dumps(value, separators=(',', ':'), allow_nan=False).replace('</', '<\\/')


def render_page(data: dict, glb: bytes | None, title: str) -> str:
    """The page's HTML text: ``data`` is the scene data (:meth:`bag_scene.SceneData.as_json` plus
    ``robot``/``world`` names, or the live page's settings), ``glb`` the scene from :mod:`.gltf`."""
    template = (WEB / 'viewer.html').read_text()
    record = vendor_record()
    replacements = {
        '{{TITLE}}': title.replace('&', '&amp;').replace('<', '&lt;'),
        '{{STYLE}}': (WEB / 'viewer.css').read_text(),
        '{{IMPORT_MAP}}': _script_json(import_map()),
        '{{DATA}}': _script_json(data),
        '{{GLB}}': base64.b64encode(glb).decode('ascii') if glb else '',
        '{{SCRIPT}}': (WEB / 'viewer.js').read_text(),
        '{{THREE_VERSION}}': record['version'],
    }
    return re.sub('|'.join(re.escape(key) for key in replacements), lambda m: replacements[m.group(0)], template)
