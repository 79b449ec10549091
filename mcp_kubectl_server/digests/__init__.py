"""Pure functions from Kubernetes objects to text for a model: no reads, no state.

    text.py                 one_line, kv, quoted, times and ages, log cleaning (shared by all)
    pods.py, pod_detail.py  the pod list; describe_pod
    events.py               event lines and get_events
    workloads.py,           get_workloads; describe_workload (revisions, rollout state)
    workload_detail.py
    services.py storage.py config.py quotas.py nodes.py   one per tool family
    netpol.py, netpol_rules.py   get_network_policies; NetworkPolicy semantics
    scheduling.py, selectors.py, quantity.py   constraints, label selectors, resource quantities
    ingresses.py, certs.py  get_ingresses; the X.509 fields of a TLS certificate (DER reader)
    rbac.py, priority.py    get_rbac (subjects and rules as the authorizer matches them);
                            get_priority_classes
    custom/                 custom resources (get_custom_resources: Argo CD, Flux, KEDA, Istio,
                            cert-manager, Chaos Mesh, generic, names-only) and get_api_resources
    promql.py               a model's PromQL confined to one namespace (scope_query,
                            check_series); under it promql_lex.py (tokens), promql_parse.py
                            (the tree), promql_check.py (type rules), promql_ast.py (nodes,
                            functions, rendering), promql_literals.py (numbers, durations, strings)
"""
