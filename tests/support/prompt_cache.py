"""The Messages API's prompt cache as a prefix rule, for the fake API and `make bench`.

A request is read in the API's cache order as a list of blocks: each tool definition, then each
system block, then each message's content blocks (a string content is one block). A block that
carries cache_control (a breakpoint; the API takes at most 4) ends a prefix the request writes
to the cache. From each of its breakpoints a request looks back block by block, at most LOOKBACK
block boundaries (the breakpoint's own included), for a prefix an earlier request wrote, and
reads the longest it finds: an entry written further back is not found, even when the request
starts with it. A request never reads what it writes itself. It is billed in three parts, as
the API bills it:

    |<------ read ------>|<---- written ---->|<-- uncached -->|
    tools, system, messages ...    last breakpoint ^    the blocks after it

For comparison, `reusable` is the longest prefix any earlier request sent, written or not: what
a perfect placement of breakpoints could have read (the rest is new content: the model's last
turn and the latest tool results).

    cache = PromptCache()
    bill = cache.read(body)      # Bill(read, written, uncached, reusable), bytes; bill.total

Sizes are the canonical JSON bytes of the blocks (cache_control left out), a stand-in for
tokens. Not modelled: the minimum cacheable length, the time to live, and the model as part of
the key (the runs measured here use one model).
"""

import hashlib
import json
from dataclasses import dataclass

LOOKBACK = 20


def cache_blocks(body):
    """[(canonical bytes, marked)] for a request body, in the cache's order."""
    items = [("tool", tool) for tool in body.get("tools") or []]
    system = body.get("system") or []
    items += [("system", block) for block in
              ([{"type": "text", "text": system}] if isinstance(system, str) else system)]
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        items += [(message.get("role"), block) for block in blocks or []]
    found = []
    for where, block in items:
        marked = isinstance(block, dict) and "cache_control" in block
        if marked:
            block = {k: v for k, v in block.items() if k != "cache_control"}
        found.append((json.dumps([where, block], sort_keys=True).encode(), marked))
    return found


@dataclass(frozen=True)
class Bill:
    """One request's input bytes by how the API bills them, and what it could have read."""
    read: int        # read from the cache (0.1 of the input price)
    written: int     # written to the cache: from the read prefix to the last breakpoint (1.25)
    uncached: int    # after the last breakpoint: plain input (1.0)
    reusable: int    # the longest prefix any earlier request sent

    @property
    def total(self):
        return self.read + self.written + self.uncached


class PromptCache:
    """The prefixes marked (and all those sent) by the requests read so far."""

    def __init__(self):
        self.marked = set()  # digests of whole prefixes, each ending at a marked block
        self.sent = set()    # digests of every prefix, at every block boundary

    def read(self, body):
        """The Bill of one request; what it writes is found by the requests after it."""
        blocks = cache_blocks(body)
        running, digests, ends, total = hashlib.sha256(), [], [], 0
        for data, _ in blocks:
            running.update(len(data).to_bytes(8, "big") + data)
            digests.append(running.hexdigest())
            total += len(data)
            ends.append(total)
        breakpoints = [i for i, (_, marked) in enumerate(blocks) if marked]
        cached = 0
        for point in breakpoints:
            for i in range(point, max(point - LOOKBACK, -1), -1):
                if digests[i] in self.marked:
                    cached = max(cached, ends[i])
                    break
        reusable = max([ends[i] for i, digest in enumerate(digests) if digest in self.sent],
                       default=0)
        self.marked.update(digests[point] for point in breakpoints)
        self.sent.update(digests)
        written = ends[breakpoints[-1]] - cached if breakpoints else 0
        return Bill(read=cached, written=written, uncached=total - cached - written,
                    reusable=reusable)
