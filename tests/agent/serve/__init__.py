"""triage_agent.serve: the webhook service over real HTTP, and Alertmanager payloads."""
