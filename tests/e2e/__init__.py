"""End to end: the real server over stdio, real kubectl proxy, kube_sim; and make demo's runner."""
