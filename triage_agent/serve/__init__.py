"""`triage-agent serve`: the Alertmanager webhook service.

    service.py     entry point: options, the queue, workers that each run a CLI child, SIGTERM drain
    endpoints.py   the HTTP endpoints (POST /alerts, /healthz, /metrics, /runs/ID)
    runs.py        one run: its outcome file (written atomically), forwarding with retries
    alerts.py      an Alertmanager payload -> a symptom and its scope (also behind `--alert`)
Imports: service -> endpoints, runs; endpoints -> alerts. The loop never imports this package.
"""
