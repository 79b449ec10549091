"""Pure functions from Kubernetes objects to text for a model: no reads, no state.

    text.py                 one_line, kv, quoted, times and ages, log cleaning (shared by all)
    pods.py, pod_detail.py  the pod list; describe_pod
    events.py               event lines and get_events
    workloads.py,           get_workloads; describe_workload (revisions, rollout state)
    workload_detail.py
    services.py storage.py config.py quotas.py nodes.py   one per tool family
    netpol.py, netpol_rules.py   get_network_policies; NetworkPolicy semantics
    scheduling.py, selectors.py, quantity.py   constraints, label selectors, resource quantities
"""
