"""Reading the cluster, GET only, through one `kubectl proxy` child per server process.

    proxy.py      the kubectl proxy child: unix socket in a private dir, accept/reject path lists
    reader.py     Reader: GET JSON (paged lists, one item at a time), logs, Table output
    unixhttp.py   http.client over a unix socket
    errors.py     ReadError and CancelledError; API errors in words the model can act on
    tls.py        the one Secret read, with --read-tls-certificates: a TLS Secret's certificate only
    discovery.py  the API groups and custom kinds served (/apis), resolving a kind a model names,
                  and the allow-list parts of the custom kinds it resolved
Imports: reader -> proxy -> discovery -> errors; unixhttp.
"""
