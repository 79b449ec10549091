"""Where on-call people talk: Slack over Socket Mode, reaching serve's approvals, never around them.

    websocket.py   a standard-library RFC 6455 client (ws:// and wss://)
    webapi.py      the Slack Web API: chat.postMessage / chat.update / chat.postEphemeral,
                   429 Retry-After, a bounded retry queue, failures counted
    socketmode.py  apps.connections.open, envelopes acknowledged, reconnects, dedupe
    blocks.py      Block Kit messages within Slack's limits; everything cluster-written inert
    bridge.py      serve's side: threads per alert fingerprint, approvals by button
"""
