"""A client that resets its connection while the simulator still reads its request is no error
of the simulator's: no traceback on stderr (the server's handle_error, fixtures/kube_sim/sim.py),
and the next request is served. test_reads.py has the reset in the middle of an answer."""

import socket
from urllib.request import urlopen


def test_a_client_that_resets_before_its_request_is_read_leaves_no_traceback(kube_sim, capfd):
    """A client gone in the middle of sending its request (the reset reaches the simulator while
    it reads the request line) is no error of the simulator's either."""
    sim = kube_sim("crashloop")
    host, port = sim.url.split("//")[1].split(":")
    for _ in range(5):
        with socket.create_connection((host, int(port))) as conn:
            conn.sendall(b"GET /api/v1/namespaces/prod/po")   # no end of line: still being read
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    with urlopen(sim.url + "/healthz", timeout=10) as answer:  # served after all five resets
        assert answer.read() == b"ok"
    assert "Traceback" not in capfd.readouterr().err
