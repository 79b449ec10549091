"""triage_agent.model: the Messages client (plain and streamed), the SSE reader, the replay model."""
