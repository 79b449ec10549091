"""triage_agent.evals: the scenario runner, its grader and scorecard."""
