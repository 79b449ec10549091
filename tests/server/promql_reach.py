"""Reach-around queries for the PromQL scope tests, and the series they run against.

SERIES holds the namespace in scope (prod) beside others: staging, kube-system (a secret's
token in a label), vault (a password and a key in labels), monitoring (kube-state-metrics,
whose exported_namespace names prod), and series without any namespace label (node metrics).
PROD_SERIES is prod's share alone: a rewritten query is in scope when it answers the same over
both. REACH_AROUND lists (category, query) pairs, each query trying to read outside prod.
MARKERS are label values found only outside prod; none may reach an answer that the query
text did not put there itself.
"""

from tests.support.prometheus import Series

NAMESPACE = "prod"
OTHERS = ["staging", "kube-system", "vault"]
MARKERS = ["staging", "kube-system", "vault", "monitoring", "hunter2-s3cr3t",
           "AKIAFAKESECRETKEY42", "s3cr3t-token-value", "db-password", "node-exporter"]


def _counter(per_second):
    return lambda age: round(3600 * per_second - age * per_second, 3)


def _series():
    out = []
    for k, ns in enumerate([NAMESPACE, *OTHERS], 1):
        for pod in ("web-1", "web-2"):
            for code, share in (("200", 0.9), ("500", 0.1)):
                out.append(Series("http_requests_total", {"namespace": ns, "pod": pod,
                                                          "code": code}, _counter(k * share)))
            base = {"namespace": ns, "pod": pod, "container": "app"}
            out.append(Series("container_cpu_usage_seconds_total", base, _counter(0.25 * k)))
            out.append(Series("container_memory_working_set_bytes", base,
                              lambda age, k=k: 2e8 * k - age * 1000))
            out.append(Series("kube_pod_info", {"namespace": ns, "pod": pod, "node": "n1"}))
        out.append(Series("up", {"namespace": ns, "job": "web"}))
        out.append(Series("app_info", {"namespace": ns, "note": f"ünïcødé ✓ {ns}"}, k))
    out += [
        Series("app_credentials", {"namespace": "vault", "password": "hunter2-s3cr3t",
                                   "api_key": "AKIAFAKESECRETKEY42"}, 4242),
        Series("kube_secret_info", {"namespace": "kube-system", "secret": "db-password",
                                    "token": "s3cr3t-token-value"}),
        Series("kube_deployment_status_replicas", {"namespace": "monitoring",
                                                   "exported_namespace": NAMESPACE,
                                                   "deployment": "web"}, 3),
        Series("node_cpu_seconds_total", {"instance": "node-exporter:9100", "mode": "idle"},
               _counter(1.0)),
        Series("prometheus_build_info", {"version": "2.42.0"}),
    ]
    return out


SERIES = _series()
PROD_SERIES = [s for s in SERIES if s.labels.get("namespace") == NAMESPACE]

_SELECTOR_FORMS = ["x", "rate(x[5m])", "max_over_time(x[10m:1m])", "sum by (namespace) (x)",
                   "absent(x)", "x offset 5m", "count(x) or vector(0)"]
_NAMESPACE_MATCHERS = [
    'namespace="staging"', 'namespace=~"staging|prod"', 'namespace=~".*"', 'namespace=~".+"',
    'namespace!="prod"', 'namespace!~"prod"', 'namespace=~"prod.*"', 'namespace=~"(?i)PROD"',
    'namespace=~"p.*d|vault"', 'namespace=""', 'namespace!=""', 'namespace=~"prod|"',
    'namespace="prod", namespace!="x"', 'namespace=~"kube-.*"', "namespace='vault'",
    'namespace=`kube-system`', 'namespace="pro\\x64", namespace=~"."',
]


def _matcher_queries():
    for matcher in _NAMESPACE_MATCHERS:
        for form in _SELECTOR_FORMS:
            yield "namespace matcher", form.replace("x", f"http_requests_total{{{matcher}}}", 1)


_NAME_QUERIES = [
    '{__name__=~".+"}', '{__name__=~".*", pod!=""}', '{__name__!=""}', '{__name__=~"app_.*"}',
    '{__name__="app_credentials"}', '{__name__=~"kube_secret_info|app_credentials"}',
    'count by (__name__, namespace) ({__name__=~".+"})', '{__name__=~"node_.*"}',
    'group by (password, api_key) ({__name__="app_credentials"})', '{__name__=~"(?i)APP_CRED.*"}',
    'sum by (__name__) (rate({__name__=~".+_total"}[5m]))', "app_credentials",
    "kube_secret_info", "node_cpu_seconds_total", "prometheus_build_info",
    "kube_deployment_status_replicas", '{exported_namespace="prod"}',
    'kube_deployment_status_replicas{exported_namespace="prod"}',
    'last_over_time({__name__=~"app_cred.+"}[1h])', 'topk(100, {__name__=~".+"})',
    '{__name__=~"app_credentials", password=~".+"}', '{password=~"hunter.*"}', '{token!=""}',
    '{api_key=~"AKIA.*"}', '{secret="db-password"}', '{instance=~".+"}',
]

_SET_QUERIES = [
    "up or on() app_credentials", "vector(1) and on() app_credentials",
    "up unless on() kube_secret_info", "app_credentials or up", "up or on(namespace) app_info",
    "kube_secret_info and on() up", "up * on() group_left(password, api_key) app_credentials",
    "up + on() group_right app_credentials", "up or ignoring(namespace) app_credentials",
    "(up or app_credentials) unless up", "app_info or on(note) app_info",
    "sum by (namespace) (up) or sum by (namespace) (kube_secret_info)",
    "up and on() (count(app_credentials) > 0)", "up unless on() absent(app_credentials)",
    "up > on() group_left(token) kube_secret_info", "up or on() vector(1)",
    "http_requests_total / ignoring(code) group_left sum without (code) (http_requests_total)",
    "up or app_info or app_credentials or kube_secret_info or node_cpu_seconds_total",
    "up == bool on() group_left(password) app_credentials",
    "count(app_credentials) or count(up)", "scalar(app_credentials) + up",
]

_FORGE_QUERIES = [
    'label_replace(up, "namespace", "staging", "", "")',
    'label_replace(app_credentials, "namespace", "prod", "", "")',
    'label_replace(up, ("namespace"), "$1", "job", "(.*)")',
    'label_replace(up, `namespace`, "vault", "", "")',
    "label_replace(up, 'name\\x73pace', 'vault', '', '')",
    'label_join(up, "namespace", "", "job")', 'label_join(app_info, "namespace", ",")',
    'sum by (namespace) (label_replace(rate(http_requests_total[5m]), "namespace", "kube-system",'
    ' "", ""))', 'count_values("namespace", up)', 'count_values(("namespace"), up) by (job)',
    'label_replace(up, "exported_namespace", "$1", "namespace", "(.*)")',
    'label_replace(up, "Namespace", "staging", "", "")',
    'label_replace(up, "src", "$1", "namespace", "(.*)") or on(src) app_credentials',
    'label_join(up, "ns", "-", "namespace", "job")', 'count_values("ns", app_credentials)',
    'label_replace(vector(1), "namespace", "prod", "", "")',
]

_ABSENT_QUERIES = [
    'absent(app_credentials{password="hunter2-s3cr3t"})', "absent(app_credentials)",
    'absent(kube_secret_info{token="s3cr3t-token-value"})', "absent_over_time(app_credentials[1h])",
    'absent(nonexistent{job="x"})', "absent(up)", "absent(sum(app_credentials))",
    "present_over_time(app_credentials[1h])", 'absent({__name__="app_credentials"})',
    "absent(node_cpu_seconds_total)", 'absent_over_time({__name__=~"app_.*"}[5m])',
]

_TIME_QUERIES = [
    "max_over_time(app_credentials[1h:1m])", "max_over_time(rate(http_requests_total[5m])[30m:1m])",
    "app_credentials offset 30m", "app_credentials offset -30m", "app_credentials @ start()",
    "app_credentials @ end()", "kube_secret_info[10m] offset 5m",
    "max_over_time(max_over_time(app_credentials[5m:1m])[20m:5m])",
    "rate(http_requests_total[5m] @ end() offset 10m)", "last_over_time(app_credentials[1h] @ 1)",
    "sum_over_time((up or app_credentials)[10m:1m] offset 1m)",
    "timestamp(app_credentials)", "changes(kube_secret_info[1h])", "app_credentials @ 100",
]

_TEXT_QUERIES = [
    'up{job="}"} # {namespace="staging"}', 'up # }\n or app_credentials',
    'up{job="\\"} or {namespace=\\"staging"}', "up{job='\\'}'} or kube_secret_info",
    'up{job=`"}` or app_credentials{job=`{`}', 'label_replace(up, "a", "{namespace=\\"x\\"}", "", "")',
    'up # namespace="vault"\n', '# namespace=~".*"\nup', 'up{job="# not a comment"} or app_info',
    'up{job="\\x7d"} or app_credentials', 'app_info{note="ünïcødé ✓ staging"}',
    'app_info{note=~"ünïcødé.*"}', 'app_info{note=~".*✓.*"}', 'up{job="日本"} or app_credentials',
    'up{nаmespace="staging"}', 'up{job="\\u0022} or {"}', 'up{job="a\\\\"} or app_credentials',
    "up{job=`\\`} or kube_secret_info", 'up{job="\\n"} or node_cpu_seconds_total',
    "up\n  or\n  app_credentials # newline-separated", "up\tor\tapp_credentials",
]


def _long_queries():
    long_value = "x" * 9000
    yield "long", f'up{{job="{long_value}"}} or app_credentials'
    yield "long", " or ".join(["up"] * 60 + ["app_credentials"])
    yield "long", " or ".join(["up"] * 200 + ["app_credentials"])
    yield "long", " + ".join(["app_credentials"] * 90)
    yield "deep", "(" * 95 + "app_credentials" + ")" * 95
    yield "deep", "(" * 300 + "app_credentials" + ")" * 300
    yield "deep", "abs(" * 90 + "kube_secret_info" + ")" * 90
    yield "deep", "sum(" * 50 + "app_credentials" + ")" * 50
    yield "deep", "-" * 90 + "app_credentials"
    yield "deep", "max_over_time(" * 20 + "app_credentials" + "[5m:1m])" * 20
    yield "deep", "label_replace(" * 30 + "up" + ', "a", "b", "", "")' * 30
    yield "deep", "sum by (namespace) (" * 40 + "rate(app_credentials[5m])" + ")" * 40


_SCALAR_QUERIES = [
    "vector(1)", "scalar(app_credentials)", "time()", "app_credentials > bool 0",
    "count(app_credentials)", "sum(rate(http_requests_total[5m]))", '"a string"',
    "sum without (namespace) (up)", "max(app_info)", "quantile(0.5, kube_secret_info)",
    "histogram_quantile(0.9, app_credentials)", 'sort_desc(sum by (pod) (up))',
    "pi()", "vector(time()) - on() group_left app_credentials",
]


def reach_around():
    """(category, query) for every reach-around query."""
    out = list(_matcher_queries())
    for category, queries in (("__name__", _NAME_QUERIES), ("set operators", _SET_QUERIES),
                              ("forged label", _FORGE_QUERIES), ("absent", _ABSENT_QUERIES),
                              ("offset, @, subqueries", _TIME_QUERIES),
                              ("comments, strings, unicode", _TEXT_QUERIES),
                              ("scalars and dropped labels", _SCALAR_QUERIES)):
        out += [(category, q) for q in queries]
    out += list(_long_queries())
    return out


REACH_AROUND = reach_around()
