"""The model seam: request dict -> response dict.

    messages.py   MessagesClient: the Anthropic Messages API over raw HTTP (retries, errors, streaming)
    sse.py        server-sent events -> the assembled message, equal to the non-streamed one
    replay.py     ReplayModel: recorded responses from a fixture, no API key
Imports: messages -> sse; replay -> seams (RunEnded). Nothing here imports the loop.
"""
