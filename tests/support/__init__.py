"""Fakes and helpers for the tests (no tests here): fake MCP and Messages servers, the server driver, plugins."""
