"""A small OTLP/HTTP trace receiver for the tests: what a collector's port 4318 does, on the
official protobuf messages of `opentelemetry-proto` (PyPI).

It accepts `POST /v1/traces` with an `application/x-protobuf` ExportTraceServiceRequest,
answers an empty ExportTraceServiceResponse, and keeps every span it received as a dict:
name, kind (SERVER, CLIENT, INTERNAL...), traceId, spanId, parentSpanId (hex), attributes,
status, and the resource's attributes.

    with Receiver() as rx:            # serves on 127.0.0.1, a free port, in a thread
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = rx.endpoint
        ...
        spans = rx.wait_for(lambda spans: ..., timeout=10)
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


class Receiver:
    """An OTLP/HTTP trace receiver on loopback, collecting spans in memory."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.requests = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server API)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                if self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_error(415)
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver._keep(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _keep(self, request: ExportTraceServiceRequest) -> None:
        with self._lock:
            self.requests += 1
            for rs in request.resource_spans:
                resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(
                            {
                                "name": s.name,
                                "kind": Span.SpanKind.Name(s.kind).removeprefix("SPAN_KIND_"),
                                "traceId": s.trace_id.hex(),
                                "spanId": s.span_id.hex(),
                                "parentSpanId": s.parent_span_id.hex(),
                                "attributes": {kv.key: _value(kv.value) for kv in s.attributes},
                                "status": s.status.code,
                                "resource": resource,
                                "scope": ss.scope.name,
                            }
                        )

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.spans)

    def wait_for(self, done: Callable[[list[dict[str, Any]]], bool], timeout: float = 15.0) -> list[dict[str, Any]]:
        """The spans received, once `done(spans)` holds; raises after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            spans = self.snapshot()
            if done(spans):
                return spans
            if time.monotonic() > deadline:
                names = sorted({s["name"] for s in spans})
                raise AssertionError(f"the receiver did not get the spans awaited in {timeout} s; it has {names}")
            time.sleep(0.05)

    def __enter__(self) -> Receiver:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
