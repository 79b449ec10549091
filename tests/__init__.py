"""Tests (pytest). A package, so test modules can share helpers such as fake_messages_api."""
