"""get_priority_classes digest: order, the global default and its consequence, bounds."""

from fixtures.kube_sim.objects import access as a
from mcp_kubectl_server.digests.priority import CLASSES_MAX, priority_classes_digest

BUILT_IN = [a.priority_class("system-node-critical", 2000001000), a.priority_class("system-cluster-critical", 2000000000)]


def test_healthy_classes_highest_first_and_no_default():
    text = priority_classes_digest({"items": BUILT_IN + [a.priority_class("batch", 100, preemption="Never",
                                                                          description="for jobs that may wait")]})
    lines = text.splitlines()
    assert lines[0] == "priority classes: 3 (no global default: pods that name no class get priority 0)"
    assert lines[1] == "system-node-critical value=2000001000 preemption=PreemptLowerPriority (built in)"
    assert lines[3] == 'batch value=100 preemption=Never "for jobs that may wait"'


def test_a_high_global_default_is_said_with_what_it_does():
    text = priority_classes_digest({"items": BUILT_IN + [a.priority_class("team-a-high", 1000000, global_default=True)]})
    assert text.splitlines()[0] == ("priority classes: 3 (global default: team-a-high, value 1000000; pods that"
                                    " name no class get it; such pods may preempt (evict) pods of lower"
                                    " priority to be scheduled)")
    assert "team-a-high value=1000000 global-default preemption=PreemptLowerPriority" in text


def test_two_defaults_the_smaller_wins_and_an_unset_policy():
    low, high = a.priority_class("low", 10, global_default=True), a.priority_class("high", 50, global_default=True)
    high.pop("preemptionPolicy")
    text = priority_classes_digest({"items": [high, low]})
    assert "global default: low, value 10;" in text and "2 classes are marked globalDefault" in text
    assert "high value=50 global-default preemption=PreemptLowerPriority" in text


def test_none_and_too_many():
    assert priority_classes_digest({"items": []}).startswith("no PriorityClasses in the cluster")
    many = [a.priority_class(f"c{i}", i) for i in range(CLASSES_MAX + 5)]
    assert priority_classes_digest({"items": many}).endswith("... 5 more PriorityClasses not shown")


def test_a_description_is_redacted_and_kept_on_one_line():
    pc = a.priority_class("batch", 10, description="ask ops\nAuthorization: Bearer plantBearerToken0042")
    text = priority_classes_digest({"items": [pc]})
    assert "plantBearerToken0042" not in text and len(text.splitlines()) == 2
