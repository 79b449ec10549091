"""The tools: one module per family, each declaring TOOLS, HANDLERS and ORDER.

    spec.py       Tool, the shared argument schemas, check_arguments and check_scope
    registry.py   collects every family module of this package; run_tool
    pods.py logs.py workloads.py services.py config.py storage.py quotas.py netpol.py nodes.py
    ingresses.py rbac.py priority.py metrics.py
A family module reads through read.Reader and hands what it read to digests/<family>.py.
Adding a family is adding a module here (and its digest): nothing else is edited.
"""
