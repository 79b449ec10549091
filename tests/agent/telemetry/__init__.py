"""triage_agent.telemetry: audit and cost records, spans, OTLP export."""
