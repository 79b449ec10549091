"""The real CLI as a subprocess: options, gates, scope, signals, streaming, preflight, foreign servers."""
