"""`triage-agent serve`: the Alertmanager webhook service.

    service.py     entry point: options, the queue, workers that each run a CLI child, SIGTERM drain
    endpoints.py   the HTTP endpoints (POST /alerts, /healthz, /metrics, /runs/ID) and dispatch
    runs.py        one run: its outcome file (written atomically), forwarding with retries
    alerts.py      an Alertmanager payload -> a symptom and its scope (also behind `--alert`)
    approvals.py   pending approvals: files in the outbox, decided once, run at most once
    verify.py      the watch after an executed approval, through a read-only server of its own
    outcomes.py    a run's outcome file as its approvals change (actions_taken, approval_url)
    api.py         /api/approvals: JSON with an operator's bearer token
    sessions.py    the operators file, browser sessions and their CSRF tokens
    web.py, pages.py  the operator's pages: routes, and the escaped HTML they render
Imports: service -> endpoints, runs, approvals, outcomes, verify; endpoints -> alerts, api, web;
web -> api, pages, sessions. The loop never imports this package; the CLI imports approvals.py
only to hand proposals over under serve (--pending-approvals).
"""
