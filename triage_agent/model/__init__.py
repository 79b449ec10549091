"""The model seam: request dict -> response dict.

    messages.py   MessagesClient: the Anthropic Messages API over raw HTTP (retries, errors, streaming)
    sse.py        server-sent events -> the assembled message, equal to the non-streamed one
    profiles.py   what a request carries for the hosted API and for self-hosted compatible servers
    replay.py     ReplayModel: recorded responses from a fixture, no API key
    errors.py     ApiError: a call that failed for good (what the loop catches, without the client)
Imports: messages -> sse, profiles, errors; replay -> seams (RunEnded), errors. Nothing here
imports the loop.
"""
