"""A real headless Chromium for the viewer tests: Debian's ``chromium`` (scripts/setup.sh installs it with
ROBOTSIM_TEST_DEPS=1) driven by Playwright's Python API (requirements/test.txt). Playwright's own browser
download is never used: the launch names the Debian executable."""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CHROMIUM = '/usr/bin/chromium'
CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync', '--no-first-run']
VIEWPORT = {'width': 1280, 'height': 800}
READY_TIMEOUT_MS = 120_000
"""Hang guard for a page to load its scene (a loaded 2-core machine renders with the CPU)."""


@contextlib.contextmanager
def chromium():
    sync_api = pytest.importorskip('playwright.sync_api',
                                   reason='test-only dependency: ROBOTSIM_TEST_DEPS=1 scripts/setup.sh')
    if not Path(CHROMIUM).exists() and not shutil.which('chromium'):
        pytest.skip("Debian's chromium is not installed: ROBOTSIM_TEST_DEPS=1 scripts/setup.sh")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class PageLog:
    """What a page said and asked for while a test used it."""

    console: list[tuple[str, str]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return [text for kind, text in self.console if kind in ('error', 'pageerror')]


def open_viewer(browser, url: str):
    """(page, log) once ``window.robotsimViewer.ready``."""
    page = browser.new_page(viewport=VIEWPORT)
    log = PageLog()
    page.on('console', lambda message: log.console.append((message.type, message.text)))
    page.on('pageerror', lambda error: log.console.append(('pageerror', str(error))))
    page.on('request', lambda request: log.requests.append(request.url))
    page.goto(url)
    page.wait_for_function('window.robotsimViewer && (window.robotsimViewer.ready || '
                           'window.robotsimViewer.errors.length > 0)', timeout=READY_TIMEOUT_MS)
    return page, log
