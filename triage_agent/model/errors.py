"""The model seam's one error: a Messages API call that failed for good.

Its own module so that what only catches it (the loop, the replay model) loads no HTTP client:
a replayed run imports neither http.client nor ssl."""


class ApiError(Exception):
    """A Messages API call that failed for good: HTTP status (None when no response arrived),
    the API's `error.type`, its message, and the request id when the server sent one."""

    def __init__(self, status, error_type, message, request_id=None):
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message
        self.request_id = request_id

    def __str__(self):
        where = f"HTTP {self.status}" if self.status is not None else "no response"
        rid = f" (request-id {self.request_id})" if self.request_id else ""
        return f"{self.error_type} ({where}): {self.message}{rid}"
