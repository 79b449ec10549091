"""Tests (pytest): a package so test modules can share helpers (tests.fake_messages_api, tests.test_cli)."""
