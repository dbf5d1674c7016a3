"""A scripted OpenAI-compatible chat server, for the plan loop's tests.

Usage: python3 planner_scripted.py SCRIPT.json LOG.jsonl

SCRIPT.json is a list of answers, served in order to successive
`POST /v1/chat/completions` requests (the last one repeats when the list is
spent). Each answer is one of:

- {"content": "<text>"}: 200 with a chat completion whose
  choices[0].message.content is the text;
- {"plan": {...}}: the same, with the object written as JSON text;
- {"status": 500, "body": "<text>"}: that status and body;
- {"refuse_format": "json_schema"}: 400 naming response_format when the
  request's response_format has that type, otherwise the next answer.
- {"sleep": 3.0, ...}: wait that many seconds first.

Every request received is appended to LOG.jsonl as
{"path", "headers": {lower-case name: value}, "body": <JSON>}. The server
listens on 127.0.0.1, a free port, and prints `http://127.0.0.1:PORT/v1` on
its first line of standard output once it listens.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Script:
    def __init__(self, answers: list[dict[str, Any]], log: str) -> None:
        self.answers = answers
        self.log = log
        self.next = 0
        self.lock = threading.Lock()

    def take(self, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            while True:
                i = min(self.next, len(self.answers) - 1)
                answer = self.answers[i]
                self.next += 1
                refuse = answer.get("refuse_format")
                if refuse is None:
                    return answer
                rf = body.get("response_format") or {}
                if rf.get("type") == refuse:
                    return {
                        "status": 400,
                        "body": json.dumps(
                            {"error": {"message": f"response_format type {refuse} is not supported"}}
                        ),
                    }

    def record(self, path: str, headers: dict[str, str], body: Any) -> None:
        with self.lock, open(self.log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"path": path, "headers": headers, "body": body}) + "\n")


def completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "scripted",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        }
    ).encode()


def handler_for(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            if self.path.rstrip("/").endswith("/models"):
                self.send(200, json.dumps({"object": "list", "data": [{"id": "scripted"}]}).encode())
            else:
                self.send(404, b'{"error": "not found"}')

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            script.record(self.path, headers, body)
            if not self.path.endswith("/chat/completions"):
                self.send(404, b'{"error": "not found"}')
                return
            answer = script.take(body if isinstance(body, dict) else {})
            if answer.get("sleep"):
                time.sleep(float(answer["sleep"]))
            if "status" in answer:
                self.send(int(answer["status"]), str(answer.get("body", "")).encode())
            elif "plan" in answer:
                self.send(200, completion(json.dumps(answer["plan"])))
            else:
                self.send(200, completion(str(answer.get("content", ""))))

    return Handler


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        answers = json.load(f)
    script = Script(answers, sys.argv[2])
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(script))
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
