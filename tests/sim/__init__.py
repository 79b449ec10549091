"""The Kubernetes API simulator through real kubectl."""
