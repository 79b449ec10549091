"""The tools seam: an MCP server over stdio.

    client.py   McpStdioClient: spawn, handshake (server/discover first, initialize as fallback),
                tools/list with its cache hints, tools/call with a timeout, the shutdown order
    wire.py     newline-delimited JSON-RPC framing over a child's pipes: requests, replies, pings
Imports: client -> wire. Nothing here imports the loop.
"""
