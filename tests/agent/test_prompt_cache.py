"""The prompt-cache prefix rule the fake Messages API and `make bench` measure with."""

from tests.support.prompt_cache import LOOKBACK, Bill, PromptCache, cache_blocks

MARK = {"cache_control": {"type": "ephemeral"}}
TOOLS = [{"name": "get_pods", "description": "list pods", "input_schema": {"type": "object"}}]


def text(words, marked=False):
    return dict({"type": "text", "text": words}, **(MARK if marked else {}))


def body(*turns, tools=TOOLS, system_marked=True):
    """A request: tools, a marked system block, then alternating user/assistant turns."""
    roles = ("user", "assistant")
    return {"tools": tools, "system": [text("you triage", system_marked)],
            "messages": [{"role": roles[i % 2], "content": list(blocks)}
                         for i, blocks in enumerate(turns)]}


def size(request, blocks):
    """Bytes of the first `blocks` blocks of a request, in cache order."""
    return sum(len(data) for data, _ in cache_blocks(request)[:blocks])


def test_nothing_is_read_before_something_was_marked_and_not_from_itself():
    cache = PromptCache()
    first = body([text("pods restart", marked=True)])
    assert cache.read(first) == Bill(read=0, written=size(first, 3), uncached=0, reusable=0)


def test_a_request_without_breakpoints_reads_nothing_and_marks_nothing():
    cache = PromptCache()
    plain = body([text("pods restart")], system_marked=False)
    assert cache.read(plain) == Bill(read=0, written=0, uncached=size(plain, 3), reusable=0)
    again = cache.read(plain)
    assert again.read == 0 and again.reusable == size(plain, 3)  # sent before, though


def test_the_next_step_reads_up_to_the_previous_steps_newest_user_turn():
    cache = PromptCache()
    step1 = body([text("pods restart", marked=True)])
    step2 = body([text("pods restart")], [text("looking")], [text("3 pods", marked=True)])
    cache.read(step1)
    bill = cache.read(step2)
    assert bill.read == bill.reusable == size(step2, 3) and bill.total == size(step2, 5)
    assert bill.written == size(step2, 5) - size(step2, 3) and bill.uncached == 0


def test_cache_control_is_not_part_of_the_bytes():
    marked, plain = body([text("a", marked=True)]), body([text("a")])
    assert [data for data, _ in cache_blocks(marked)] == [data for data, _ in cache_blocks(plain)]


def test_a_change_in_the_tools_leaves_nothing_to_read():
    cache = PromptCache()
    cache.read(body([text("pods restart", marked=True)]))
    other = [dict(TOOLS[0], description="list pods. Allowed namespaces: prod.")]
    bill = cache.read(body([text("pods restart", marked=True)], tools=other))
    assert (bill.read, bill.reusable) == (0, 0)


def test_a_new_first_turn_still_reads_tools_and_system():
    cache = PromptCache()
    cache.read(body([text("pods restart in prod", marked=True)]))
    again = body([text("the cart is slow in staging", marked=True)])
    assert cache.read(again).read == size(again, 2)


def test_a_marked_prefix_is_found_only_within_the_lookback_window():
    def turns(n, marked_at):  # one user turn of n blocks after tools and system (2 blocks)
        return body([text(f"line {i}", marked=i == marked_at) for i in range(n)],
                    system_marked=False)
    near = turns(LOOKBACK, marked_at=LOOKBACK - 1)  # breakpoint 19 blocks after line 0's
    far = turns(LOOKBACK + 1, marked_at=LOOKBACK)   # 20 blocks after: outside the window
    for request, expected in ((near, size(near, 3)), (far, 0)):
        cache = PromptCache()
        cache.read(turns(1, marked_at=0))           # marks tools + system + line 0
        assert cache.read(request).read == expected


def test_the_bill_writes_up_to_the_last_breakpoint_and_leaves_the_rest_uncached():
    cache = PromptCache()
    first = body([text("pods restart", marked=True), text("tail")], system_marked=False)
    # nothing read; tools, system and the marked block written; the block after them uncached
    assert cache.read(first) == Bill(read=0, written=size(first, 3),
                                     uncached=size(first, 4) - size(first, 3), reusable=0)
    again = body([text("pods restart", marked=True), text("tail", marked=True)],
                 system_marked=False)
    bill = cache.read(again)
    assert (bill.read, bill.written, bill.uncached) == (size(again, 3), size(again, 4) -
                                                        size(again, 3), 0)


def test_an_entry_beyond_the_lookback_is_found_only_from_a_breakpoint_near_it():
    # the earlier request wrote up to line 0; the later one starts with it, 25 blocks follow
    lines = [text(f"line {i}") for i in range(26)]
    cache = PromptCache()
    cache.read(body([text("line 0", marked=True)], system_marked=False))
    far = body(lines[:25] + [text("line 25", marked=True)], system_marked=False)
    assert cache.read(far).read == 0 and cache.read(far).reusable >= size(far, 3)
    cache = PromptCache()
    cache.read(body([text("line 0", marked=True)], system_marked=False))
    bridged = body([text("line 0", marked=True)] + lines[1:25] + [text("line 25", marked=True)],
                   system_marked=False)
    assert cache.read(bridged).read == size(bridged, 3)
