"""triage-agent: an incident-triage loop for Kubernetes around a model and read-only MCP tools.

Map (imports run downward; the loop core knows no screen and no HTTP service):
    cli.py, options.py        the command line: parse, check, wire the seams, exit codes
    loop.py, turns.py         the agent loop and the wire side of one turn
    policy.py, scope.py       dispatch rules per tool call; the namespace proof for any server
    prompts.py, report.py,    the system prompt and toolset; the report tool and its grounding;
    schema.py                 the JSON Schema subset the loop validates with
    actions/                  propose_action and its three write gates; the terminal prompt
    context.py                the result cap and the clearing of old results (the token budget)
    outcome.py                Outcome: what a run produced, its exit code, the --json object
    preflight.py              checks of the cluster before the first model call
    seams.py                  the seams (model, tools, gate, approve, runner, recorder, clock)
    terminal.py, status.py,   what a person sees: safe text, the status line, one-line digests
    lines.py
    model/                    the Messages API client, its SSE reader, the replay model
    mcp/                      the MCP stdio client and its wire helpers (both protocol eras)
    telemetry/                audit and cost records, spans, OTLP/HTTP JSON export
    serve/                    the webhook service (`triage-agent serve`): HTTP, runs, alerts
    evals/                    scenario runner, grader, scorecard (`python3 -m triage_agent.evals`)
The server side is mcp_kubectl_server; from it the agent imports only the pure redact module.
"""

__version__ = "0.1.0"
