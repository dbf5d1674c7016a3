"""Faults of `toolrag mcp --upstream ... --http` (the gateway as a team service), as tests.

Usage: python tests/mcp_faults.py SCENARIO --binary TOOLRAG --dir DIR

The upstream is the fixture of tests/mcp_gateway_fixture.py with TOOLRAG_FIXTURE_SLOW=1, which
adds the read-only tool `slow_echo` {"tag", "seconds"}: its line in the fixture's calls file is
written when the call arrives and carries the fixture's process id, so a scenario knows when a
call is out and which process serves it. Requests are plain JSON-RPC over HTTP on protocol
2026-07-28 (each request stands alone), except where the official SDK client is named, so
that what the client received is counted exactly.

Scenarios (each prints one JSON summary line; a failed check raises):
  upstream-killed       the stdio upstream is killed (SIGKILL) while a call is out: the caller
                        gets an error result within seconds, not a hang, and the next call
                        succeeds on a restarted server (another process id); audited `failed`
  upstream-killed-http  the same for an upstream reached over streamable HTTP: killed while a
                        call is out, an error result within seconds; started again on the
                        same port, the next call succeeds on it (the gateway reconnects)
  kill9                 kill -9 of the gateway while dozens of calls are in flight: every call
                        whose result a client received has its decision and result lines in
                        the audit log; every line written is whole; a gateway started again
                        on the same log appends whole lines
  sigterm               SIGTERM with two calls in flight: one that ends within the grace
                        period (10 s) gets its result; one that would take longer is ended
                        with an answer or a closed connection, never a hang; the process
                        exits 0 promptly after the grace period, and its upstream with it
Driven by tests/integration/mcp_faults.rs; needs `make mcp-client`.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_http_client import serving_url

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "mcp_gateway_fixture.py"
MODERN = "2026-07-28"
TOKEN = "faults-token-0123456789abcdef"
SLOW_ENV = {"TOOLRAG_FIXTURE_SLOW": "1"}


def check(cond: Any, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def args_sha256(arguments: dict[str, Any]) -> str:
    """The audit log's argumentsSha256: sha256 of the canonical (sorted keys, compact) JSON."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is not running.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def until(what: str, probe: Any, timeout: float, every: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = probe()
        if got:
            return got
        await asyncio.sleep(every)
    raise AssertionError(f"{what}: not within {timeout} s")


def fixture_calls(state: Path) -> list[dict[str, Any]]:
    path = Path(str(state) + ".calls")
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def slow_call(state: Path, tag: str) -> dict[str, Any] | None:
    """The fixture's line for the slow_echo call with this tag, once it arrived."""
    return next((c for c in fixture_calls(state) if c["tool"] == "slow_echo" and c["arguments"]["tag"] == tag), None)


class Gateway:
    """One `toolrag mcp --upstream ... --http 127.0.0.1:0` with a bearer token; its stderr
    goes to DIR/NAME.log."""

    def __init__(self, binary: str, dir: Path, name: str, upstream: dict[str, Any], index: str | None = None):
        (dir / f"{name}-upstream.json").write_text(json.dumps({"mcpServers": {"fixture": upstream}}))
        (dir / "tokens").write_text(f"alice:{TOKEN}\n")
        (dir / f"{name}.toml").write_text("")
        self.index = dir / (index or f"{name}-index")
        self.audit = Path(str(self.index) + ".audit.jsonl")
        self.log = open(dir / f"{name}.log", "a")
        args = [
            binary, "mcp", "--upstream", str(dir / f"{name}-upstream.json"), "--index", str(self.index),
            "--config", str(dir / f"{name}.toml"), "--http", "127.0.0.1:0", "--auth-tokens", str(dir / "tokens"),
        ]  # fmt: skip
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT,
            env=dict(os.environ, TOOLRAG_LOG="info"),
        )  # fmt: skip
        self.url = serving_url(self.proc, self.log, 120)
        self.start_s = time.monotonic() - self.started

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.audit.read_text().splitlines() if x.strip()]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def stdio_upstream(state: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    state.write_text("{}")
    config: dict[str, Any] = {"command": sys.executable, "args": [str(FIXTURE), "--state", str(state)]}
    if env:
        config["env"] = env
    return config


HEADERS = {
    "Authorization": f"Bearer {TOKEN}",
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": MODERN,
    "Mcp-Method": "tools/call",
}
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "mcp-faults", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def call_body(handle: str, arguments: dict[str, Any], id: int = 1) -> dict[str, Any]:
    params = {"name": "call_tool", "arguments": {"handle": handle, "arguments": arguments}, "_meta": ENVELOPE}
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


async def raw_call(http: httpx2.AsyncClient, url: str, handle: str, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One call_tool as a plain POST: (HTTP status, the JSON-RPC answer)."""
    r = await http.post(url, json=call_body(handle, arguments), headers={**HEADERS, "Mcp-Name": "call_tool"})
    text = r.text
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        found = [json.loads(x[5:]) for x in text.splitlines() if x.startswith("data:") and x[5:].strip()]
        answers = [m for m in found if "result" in m or "error" in m]
        return r.status_code, answers[-1] if answers else {}
    try:
        return r.status_code, json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return r.status_code, {"notJson": text[:500], "headers": dict(r.headers)}


def text_of(answer: dict[str, Any]) -> str:
    result = answer.get("result") or {}
    return "\n".join(c.get("text", "") for c in result.get("content", []))


async def sdk_call(client: Client, handle: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    r = await client.call_tool("call_tool", {"handle": handle, "arguments": arguments})
    return bool(r.is_error), "\n".join(getattr(c, "text", "") for c in r.content)


async def upstream_killed(opts: argparse.Namespace) -> dict[str, Any]:
    """The official SDK client calls; the stdio fixture is killed under a slow call."""
    dir = Path(opts.dir)
    state = dir / "state.json"
    gw = Gateway(opts.binary, dir, "gw", stdio_upstream(state, SLOW_ENV))
    out: dict[str, Any] = {"startS": round(gw.start_s, 2)}
    try:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(30.0)) as http:
            async with Client(streamable_http_client(gw.url, http_client=http), mode=MODERN) as client:
                failed, text = await sdk_call(client, "fixture/get_weather", {"city": "Oslo"})
                check(not failed, f"a first call: {text}")
                slow = asyncio.create_task(sdk_call(client, "fixture/slow_echo", {"tag": "killed", "seconds": 60}))
                line = await until("the slow call reached the fixture", lambda: slow_call(state, "killed"), 15)
                killed_at = time.monotonic()
                os.kill(line["pid"], signal.SIGKILL)
                failed, text = await asyncio.wait_for(slow, 15)
                out["errorAfterS"] = round(time.monotonic() - killed_at, 3)
                check(failed, f"the killed call is an error result: {text}")
                check("stopped during the call" in text and "restarted" in text, f"the error says so: {text}")
                check(out["errorAfterS"] < 5, f"the error came {out['errorAfterS']} s after the kill")
                out["error"] = text
                asked = time.monotonic()
                failed, text = await sdk_call(client, "fixture/slow_echo", {"tag": "after", "seconds": 0})
                out["nextCallS"] = round(time.monotonic() - asked, 3)
                check(not failed and text == "echo after", f"the next call: {text}")
                again = slow_call(state, "after")
                check(again and again["pid"] != line["pid"], f"served by a new process: {again} after {line}")
                check(out["nextCallS"] < 10, f"the next call took {out['nextCallS']} s")
    finally:
        gw.kill()
    lines = [r for r in gw.records() if r["tool"] == "fixture/slow_echo" and r["event"] == "result"]
    killed = args_sha256({"tag": "killed", "seconds": 60})
    check(
        any(r["argumentsSha256"] == killed and r["decision"] == "failed" and r.get("upstream") == "failed" for r in lines),
        f"the killed call is audited as failed: {lines}",
    )
    return out


def start_http_fixture(dir: Path, state: Path, port: int, log: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, str(FIXTURE), "--state", str(state), "--http", str(port)],
        stdout=subprocess.DEVNULL, stderr=open(dir / log, "a"), env=dict(os.environ, **SLOW_ENV),
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            check(proc.poll() is None, f"the HTTP fixture exited: {(dir / log).read_text()}")
            time.sleep(0.05)
    raise AssertionError("the HTTP fixture did not listen")


async def upstream_killed_http(opts: argparse.Namespace) -> dict[str, Any]:
    dir = Path(opts.dir)
    state = dir / "state.json"
    state.write_text("{}")
    port = free_port()
    fixture = start_http_fixture(dir, state, port, "fixture.log")
    gw = Gateway(opts.binary, dir, "gw", {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"})
    out: dict[str, Any] = {"startS": round(gw.start_s, 2)}
    try:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0)) as http:
            status, answer = await raw_call(http, gw.url, "fixture/get_weather", {"city": "Oslo"})
            check(status == 200 and not answer["result"].get("isError"), f"a first call: {status} {answer}")
            slow = asyncio.create_task(raw_call(http, gw.url, "fixture/slow_echo", {"tag": "killed", "seconds": 60}))
            line = await until("the slow call reached the fixture", lambda: slow_call(state, "killed"), 15)
            killed_at = time.monotonic()
            fixture.kill()
            fixture.wait()
            status, answer = await asyncio.wait_for(slow, 15)
            out["errorAfterS"] = round(time.monotonic() - killed_at, 3)
            check(status == 200 and answer.get("result", {}).get("isError"), f"the killed call: {status} {answer}")
            check(out["errorAfterS"] < 5, f"the error came {out['errorAfterS']} s after the kill")
            out["error"] = text_of(answer)
            check("stopped during the call" in out["error"], f"the error says the server went away: {out['error']}")
            check("rmcp::" not in out["error"], f"no Rust type names for the model: {out['error']}")
            fixture = start_http_fixture(dir, state, port, "fixture.log")
            asked = time.monotonic()
            tries = []
            while True:
                status, answer = await raw_call(http, gw.url, "fixture/slow_echo", {"tag": f"after-{len(tries)}", "seconds": 0})
                ok = status == 200 and not answer.get("result", {}).get("isError")
                tries.append(text_of(answer) if status == 200 else f"HTTP {status}")
                if ok or len(tries) >= 3 or time.monotonic() - asked > 10:
                    break
                await asyncio.sleep(0.5)
            out["tries"] = tries
            out["nextCallS"] = round(time.monotonic() - asked, 3)
            check(ok and len(tries) == 1, f"the first call after the server is back: {tries}")
            again = slow_call(state, f"after-{len(tries) - 1}")
            check(again and again["pid"] == fixture.pid and again["pid"] != line["pid"], f"served by the new server: {again}")
    finally:
        gw.kill()
        fixture.kill()
        fixture.wait()
    return out


async def kill9(opts: argparse.Namespace) -> dict[str, Any]:
    """Dozens of clients call get_weather with arguments unique to each call; the gateway is
    killed with SIGKILL under them."""
    dir = Path(opts.dir)
    state = dir / "state.json"
    gw = Gateway(opts.binary, dir, "gw", stdio_upstream(state))
    clients = 48
    received: list[str] = []
    started = {"n": 0}
    stop = asyncio.Event()
    statuses: dict[int, int] = {}
    ended: dict[str, int] = {}

    async def worker(k: int) -> None:
        limits = httpx2.Limits(max_connections=1)
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(15.0), limits=limits) as http:
            n = 0
            while not stop.is_set():
                arguments = {"city": f"kill9-{k}-{n}"}
                n += 1
                started["n"] += 1
                try:
                    status, answer = await raw_call(http, gw.url, "fixture/get_weather", arguments)
                except (httpx2.TransportError, json.JSONDecodeError) as e:
                    # The gateway is gone: the connection was refused, reset or cut short.
                    ended[type(e).__name__] = ended.get(type(e).__name__, 0) + 1
                    return
                statuses[status] = statuses.get(status, 0) + 1
                check(status == 200, f"HTTP {status} before the kill: {answer}")
                result = answer.get("result")
                check(result is not None and not result.get("isError"), f"a call before the kill: {answer}")
                received.append(args_sha256(arguments))

    tasks = [asyncio.create_task(worker(k)) for k in range(clients)]
    try:
        await until("300 results before the kill", lambda: len(received) >= 300, 30, every=0.01)
        in_flight = started["n"] - len(received)
        gw.proc.send_signal(signal.SIGKILL)
        gw.proc.wait()
        killed_with = len(received)
        await asyncio.wait_for(asyncio.gather(*tasks), 20)
    finally:
        stop.set()
        gw.kill()
    # Answers that were already on the wire may still arrive after the kill.
    out: dict[str, Any] = {"clients": clients, "inFlightAtKill": in_flight, "received": len(received),
                           "receivedAfterKill": len(received) - killed_with, "ended": ended, "statuses": statuses}  # fmt: skip
    check(in_flight >= clients // 2, f"only {in_flight} calls were in flight at the kill")
    raw = gw.audit.read_bytes()
    lines = raw.split(b"\n")
    check(lines[-1] == b"", f"the log ends with a whole line, not {lines[-1][:200]!r}")
    records = [json.loads(x) for x in lines[:-1]]
    results = {r["argumentsSha256"] for r in records if r["event"] == "result"}
    decisions = {r["argumentsSha256"] for r in records if r["event"] == "decision"}
    lost = [h for h in received if h not in results]
    undecided = [h for h in received if h not in decisions]
    check(not lost, f"{len(lost)} of {len(received)} received results have no result line in the audit log")
    check(not undecided, f"{len(undecided)} of {len(received)} received results have no decision line")
    out["auditLines"] = len(records)
    out["resultLinesNotReceived"] = len(results - set(received))
    # Started again on the same index and log: it appends whole lines after the old ones.
    again = Gateway(opts.binary, dir, "gw", stdio_upstream(state))
    try:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0)) as http:
            status, answer = await raw_call(http, again.url, "fixture/get_weather", {"city": "after-the-kill"})
            check(status == 200 and not answer["result"].get("isError"), f"after a restart: {status} {answer}")
    finally:
        again.kill()
    after = again.records()
    check(after[: len(records)] == records, "the old lines are kept as they were")
    check(
        [r["argumentsSha256"] for r in after[len(records) :]] == [args_sha256({"city": "after-the-kill"})] * 2,
        f"the restarted gateway appended its two lines: {after[len(records):]}",
    )
    out["restartS"] = round(again.start_s, 2)
    return out


async def sigterm(opts: argparse.Namespace) -> dict[str, Any]:
    """SIGTERM while a 2 s call and a 60 s call are out (the grace period is 10 s)."""
    dir = Path(opts.dir)
    state = dir / "state.json"
    gw = Gateway(opts.binary, dir, "gw", stdio_upstream(state, SLOW_ENV))
    out: dict[str, Any] = {}
    try:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(40.0)) as short_http, \
                httpx2.AsyncClient(timeout=httpx2.Timeout(40.0)) as long_http:  # fmt: skip
            short = asyncio.create_task(raw_call(short_http, gw.url, "fixture/slow_echo", {"tag": "short", "seconds": 2}))
            long = asyncio.create_task(raw_call(long_http, gw.url, "fixture/slow_echo", {"tag": "long", "seconds": 60}))
            await until("both calls reached the fixture", lambda: slow_call(state, "short") and slow_call(state, "long"), 15)
            upstream_pid = slow_call(state, "long")["pid"]
            term_at = time.monotonic()
            gw.proc.send_signal(signal.SIGTERM)
            status, answer = await asyncio.wait_for(short, 15)
            out["shortAfterS"] = round(time.monotonic() - term_at, 3)
            check(status == 200 and text_of(answer) == "echo short", f"the call within the grace period: {status} {answer}")
            try:
                status, answer = await asyncio.wait_for(long, 30)
                out["long"] = {"status": status, "answer": answer}
            except httpx2.TransportError as e:
                out["long"] = {"transportError": f"{type(e).__name__}: {e}"}
            out["longAfterS"] = round(time.monotonic() - term_at, 3)
            check(out["longAfterS"] < 15, f"the long call ended {out['longAfterS']} s after SIGTERM")
            if "answer" in out["long"]:
                # Ended at the end of the grace period. Today rmcp answers it HTTP 500 with a
                # plain-text body ("... no response message received from handler"), not a
                # JSON-RPC error that says the gateway is stopping (reported, not fixed here);
                # what this checks is that it is neither a hang nor a success.
                a = out["long"]["answer"]
                check(
                    out["long"]["status"] != 200 or "error" in a or (a.get("result") or {}).get("isError"),
                    f"a call cut short is not answered as a success: {out['long']}",
                )
        code = await asyncio.to_thread(gw.proc.wait, 20)
        out["exitAfterS"] = round(time.monotonic() - term_at, 3)
        out["exitCode"] = code
        check(code == 0, f"the gateway exited {code} on SIGTERM")
        check(out["exitAfterS"] < 15, f"the gateway exited {out['exitAfterS']} s after SIGTERM (grace 10 s)")
        await until("the upstream exited with the gateway", lambda: not alive(upstream_pid), 5)
    finally:
        gw.kill()
    records = [r for r in gw.records() if r["event"] == "result"]
    short_hash = args_sha256({"tag": "short", "seconds": 2})
    check(any(r["argumentsSha256"] == short_hash and r["decision"] == "passed" for r in records), f"audited: {records}")
    out["longAudited"] = [r["decision"] for r in records if r["argumentsSha256"] == args_sha256({"tag": "long", "seconds": 60})]
    return out


SCENARIOS = {
    "upstream-killed": upstream_killed,
    "upstream-killed-http": upstream_killed_http,
    "kill9": kill9,
    "sigterm": sigterm,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--binary", required=True)
    parser.add_argument("--dir", required=True)
    opts = parser.parse_args()
    started = time.monotonic()
    summary = asyncio.run(SCENARIOS[opts.scenario](opts))
    summary["seconds"] = round(time.monotonic() - started, 2)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
