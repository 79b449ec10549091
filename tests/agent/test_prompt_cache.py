"""The prompt-cache prefix rule the fake Messages API and `make bench` measure with."""

from tests.support.prompt_cache import LOOKBACK, PromptCache, cache_blocks

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
    assert cache.read(first) == (0, 0, size(first, 3))


def test_a_request_without_breakpoints_reads_nothing_and_marks_nothing():
    cache = PromptCache()
    plain = body([text("pods restart")], system_marked=False)
    assert cache.read(plain)[0] == 0 and cache.read(plain)[0] == 0
    assert cache.read(plain)[1] == size(plain, 3)  # sent before, though: reusable


def test_the_next_step_reads_up_to_the_previous_steps_newest_user_turn():
    cache = PromptCache()
    step1 = body([text("pods restart", marked=True)])
    step2 = body([text("pods restart")], [text("looking")], [text("3 pods", marked=True)])
    cache.read(step1)
    cached, reusable, total = cache.read(step2)
    assert cached == reusable == size(step2, 3) and total == size(step2, 5)


def test_cache_control_is_not_part_of_the_bytes():
    marked, plain = body([text("a", marked=True)]), body([text("a")])
    assert [data for data, _ in cache_blocks(marked)] == [data for data, _ in cache_blocks(plain)]


def test_a_change_in_the_tools_leaves_nothing_to_read():
    cache = PromptCache()
    cache.read(body([text("pods restart", marked=True)]))
    other = [dict(TOOLS[0], description="list pods. Allowed namespaces: prod.")]
    assert cache.read(body([text("pods restart", marked=True)], tools=other))[:2] == (0, 0)


def test_a_new_first_turn_still_reads_tools_and_system():
    cache = PromptCache()
    cache.read(body([text("pods restart in prod", marked=True)]))
    again = body([text("the cart is slow in staging", marked=True)])
    assert cache.read(again)[0] == size(again, 2)


def test_a_marked_prefix_is_found_only_within_the_lookback_window():
    def turns(n, marked_at):  # one user turn of n blocks after tools and system (2 blocks)
        return body([text(f"line {i}", marked=i == marked_at) for i in range(n)],
                    system_marked=False)
    near = turns(LOOKBACK, marked_at=LOOKBACK - 1)  # breakpoint 19 blocks after line 0's
    far = turns(LOOKBACK + 1, marked_at=LOOKBACK)   # 20 blocks after: outside the window
    for request, expected in ((near, size(near, 3)), (far, 0)):
        cache = PromptCache()
        cache.read(turns(1, marked_at=0))           # marks tools + system + line 0
        assert cache.read(request)[0] == expected
