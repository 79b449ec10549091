"""The model seam: request dict -> response dict.

    messages.py        MessagesClient: one Messages call with retries, errors and streaming, over
                       a transport (where the request goes, how it is signed, how a stream reads)
    gateway.py         the hosted API, gateways and self-hosted servers: URL, key or bearer token,
                       custom headers (HttpTransport)
    bedrock.py         Amazon Bedrock: InvokeModel[WithResponseStream], SigV4, event-stream answers
    vertex.py          Google Vertex AI: rawPredict / streamRawPredict with a bearer token
    providers.py       which of them a run uses (the options and environment), and its transport
    sigv4.py           AWS Signature Version 4
    eventstream.py     AWS event-stream framing (prelude, headers, payload, CRC32)
    aws_credentials.py the AWS credential chain and its refresh; aws_remote.py: its HTTP sources
                       (STS web identity, the container endpoint, IMDSv2)
    gcp_tokens.py      Google access tokens: a command, a refresh token, the metadata server
    sse.py             server-sent events -> the assembled message, equal to the non-streamed one
    profiles.py        what a request carries for the hosted API and for self-hosted servers
    replay.py          ReplayModel: recorded responses from a fixture, no API key
    errors.py          ApiError: a call that failed for good (what the loop catches)
Imports: messages -> gateway (default transport), sse, errors; bedrock -> sigv4, eventstream,
sse, aws_credentials (-> aws_remote); vertex -> gcp_tokens, sse; providers -> all transports
lazily; replay -> seams (RunEnded), errors. Nothing here imports the loop.
"""
