"""What a run leaves behind: audit, trace and cost.

    records.py   Recorder: audit entries (stderr and --audit-log JSONL), the price table, the cost line
    otel.py      spans in the OpenTelemetry GenAI shape, one trace per run
    otlp.py      OTLP/HTTP JSON export from the standard OTEL_EXPORTER_OTLP_* variables
Imports: records -> otel; otlp -> otel. Writing a record never changes a run's outcome.
"""
