"""Tests of triage_agent's loop core (loop, turns, policy, scope, report, schema, actions, status); subfolders mirror its subpackages."""
