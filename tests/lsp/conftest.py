"""Fixtures for the pytest-lsp end-to-end tests (helpers live in lsp_harness.py)."""

from __future__ import annotations

from lsp_harness import start_server

__all__ = ["start_server"]
