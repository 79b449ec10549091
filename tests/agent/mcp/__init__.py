"""triage_agent.mcp: the stdio client against real fake-server subprocesses, both protocol eras."""
