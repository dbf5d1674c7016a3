"""The official MCP Python client (`mcp` on PyPI) against `toolrag mcp --upstream ... --http`.

Usage: python tests/mcp_http_client.py SCENARIO --binary TOOLRAG --dir DIR

The gateway runs as a team service: streamable HTTP on loopback, bearer tokens (a tokens
file, or OAuth 2.1 access tokens from a real authorization server, panva's oidc-provider,
obtained by the SDK's own client-credentials provider), a [[gateway.policy]] per principal,
and approvals on protocol 2026-07-28 as multi-round-trip requests (MRTR) with a sealed
requestState. Upstream is the fixture server of tests/mcp_gateway_fixture.py, whose calls
file tells how often a tool really ran.

Scenarios (each prints one JSON summary line; a failed check raises):
  team      static tokens: 401 without a token; 1,000 hostile requests (bad JSON, 5 MB bodies,
            a wrong protocol version, Origin or Host, alg-none and Basic credentials, wrong
            media types, non-requests) each get a 4xx and it serves on; alice on 2026-07-28 searches, calls, gets a
            destructive call approved through MRTR once; the state replayed, with other
            arguments, or altered, is refused; bob never sees alice's tools; 2025-11-25
            approves by elicitation as before; the audit log names each principal
  replicas  two gateway processes sharing the key file and the store of used states: an
            approval started on one is finished on the other, and replayed on the first it
            is refused
  oauth     an OAuth resource server: 401 with resource_metadata, the metadata document,
            tokens from oidc-provider by client credentials, groups in the policy, a token
            for another audience refused
  typescript  the official TypeScript client (tests/mcp_http_client.mjs) on the version it
            speaks, with a token: search, card, calls, an approval by elicitation
  index     `toolrag mcp --index DIR --http` (the index's own server, no upstream) on both
            protocol versions
  otel      traces over OTLP to a real receiver (tests/otlp_receiver.py, on opentelemetry-proto):
            a span per tool call received, per search and per upstream call, children of the
            client's `traceparent` (in `_meta`, or an HTTP header), and the context passed on
            to the upstream in its call's `_meta`
Driven by tests/integration/mcp_http.rs; needs `make mcp-client mcp-servers oauth-server`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any, AsyncIterator

import httpx2
import mcp_types as types
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "mcp_gateway_fixture.py"
OAUTH_SERVER = ROOT / "target" / "oauth-npm" / "server.mjs"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
TOKENS = {"alice": "alice-token-0123456789abcdef", "bob": "bob-token-0123456789abcdef"}


def check(cond: Any, what: str) -> None:
    if not cond:
        raise AssertionError(what)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def serving_url(proc: subprocess.Popen[str], log: IO[str], timeout: float) -> str:
    """The /mcp URL that `toolrag mcp --http` prints once it serves, read from its stderr
    (copied to `log`); a thread then keeps copying the rest, so that it never blocks on a
    full pipe. Raises if the process exits or says nothing of the kind within `timeout` s."""
    assert proc.stderr is not None
    stderr = proc.stderr
    lines = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stderr.readline()
        if not line:
            raise AssertionError("the gateway exited:\n" + "".join(lines))
        lines.append(line)
        log.write(line)
        log.flush()
        m = re.search(r"MCP over streamable HTTP on (http://\S+/mcp)", line)
        if m:

            def drain() -> None:
                for rest in stderr:
                    log.write(rest)
                    log.flush()

            threading.Thread(target=drain, daemon=True).start()
            return m.group(1)
    raise AssertionError("the gateway did not start:\n" + "".join(lines))


class Gateway:
    """One `toolrag mcp --upstream ... --http` process."""

    def __init__(
        self,
        binary: str,
        dir: Path,
        name: str,
        config: str,
        extra: list[str],
        port: int = 0,
        env: dict[str, str] | None = None,
    ):
        self.dir = dir
        self.log = open(dir / f"{name}.log", "w")
        (dir / f"{name}.toml").write_text(config)
        args = [
            binary, "mcp", "--upstream", str(dir / "upstream.json"), "--index", str(dir / f"{name}-index"),
            "--config", str(dir / f"{name}.toml"), "--http", f"127.0.0.1:{port}", *extra,
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            args,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=dict(os.environ, TOOLRAG_LOG="info", **(env or {})),
            text=True,
            cwd=ROOT,
        )
        self.url = self._wait_ready()

    def _wait_ready(self) -> str:
        return serving_url(self.proc, self.log, 300)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("the gateway did not stop within 30 s of SIGTERM")
        check(self.proc.returncode == 0, f"the gateway exited {self.proc.returncode} on SIGTERM")


@asynccontextmanager
async def connect(
    url: str,
    token: str | None = None,
    mode: str = MODERN,
    approve: str | None = "approve",
    auth: httpx2.Auth | None = None,
    extra_headers: dict[str, str] | None = None,
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    headers.update(extra_headers or {})
    http = httpx2.AsyncClient(headers=headers, auth=auth, timeout=httpx2.Timeout(120.0))
    callback = None
    if approve is not None:

        async def callback(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            return types.ElicitResult(action="accept", content={"decision": approve})

    async with http:
        transport = streamable_http_client(url, http_client=http)
        client = Client(transport, mode=mode if mode == MODERN else "legacy", elicitation_callback=callback)
        async with client:
            check(client.protocol_version == mode, f"negotiated {client.protocol_version}, wanted {mode}")
            yield client


async def search(client: Client, query: str, k: int = 10) -> tuple[list[str], str]:
    r = await client.call_tool("search_tools", {"query": query, "k": k})
    check(not r.is_error, f"search_tools failed: {text_of(r)}")
    assert r.structured_content is not None
    return [c["nodeId"] for c in r.structured_content["candidates"]], json.dumps(r.model_dump(mode="json"))


def calls(dir: Path, tool: str) -> list[dict[str, Any]]:
    path = dir / "state.json.calls"
    if not path.exists():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [c for c in lines if c.get("tool") == tool]


def audit(dir: Path, name: str) -> list[dict[str, Any]]:
    path = dir / f"{name}-index.audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def approval(decision: str) -> dict[str, Any]:
    return {"approval": {"action": "accept", "content": {"decision": decision}}}


async def mrtr_first(client: Client, handle: str, arguments: dict[str, Any]) -> types.InputRequiredResult:
    r = await client.session.call_tool(
        "call_tool", {"handle": handle, "arguments": arguments}, allow_input_required=True
    )
    check(isinstance(r, types.InputRequiredResult), f"expected input_required, got {r}")
    assert isinstance(r, types.InputRequiredResult)
    check(r.request_state, "input_required carries a requestState")
    check(r.input_requests and "approval" in r.input_requests, f"the question: {r.input_requests}")
    return r


async def mrtr_retry(
    client: Client, handle: str, arguments: dict[str, Any], state: str, decision: str = "approve"
) -> types.CallToolResult:
    r = await client.session.call_tool(
        "call_tool",
        {"handle": handle, "arguments": arguments},
        input_responses=approval(decision),
        request_state=state,
        allow_input_required=True,
    )
    check(isinstance(r, types.CallToolResult), f"expected a result, got {r}")
    assert isinstance(r, types.CallToolResult)
    return r


async def approved_once(asker: Client, finisher: Client, replayer: Client, dir: Path, args: dict[str, Any], before: int) -> None:
    """A destructive call approved through an MRTR round runs once; its state used again is refused."""
    first = await mrtr_first(asker, "fixture/delete_note", args)
    check(len(calls(dir, "delete_note")) == before, "asking runs nothing")
    state = first.request_state
    assert state is not None
    done = await mrtr_retry(finisher, "fixture/delete_note", args, state)
    check(not done.is_error, f"the retry: {text_of(done)}")
    check(len(calls(dir, "delete_note")) == before + 1, "the retry ran the call")
    replay = await mrtr_retry(replayer, "fixture/delete_note", args, state)
    check(replay.is_error and "already used" in text_of(replay), f"the replay: {text_of(replay)}")
    check(len(calls(dir, "delete_note")) == before + 1, "a replay runs nothing")


def write_upstream(dir: Path) -> None:
    (dir / "state.json").write_text("{}")
    config = {"mcpServers": {"fixture": {"command": sys.executable, "args": [str(FIXTURE), "--state", str(dir / "state.json")]}}}
    (dir / "upstream.json").write_text(json.dumps(config))


POLICY = """
[gateway.tool-calls-per-minute]
"fixture/lookup_order" = 2

[[gateway.policy]]
principals = ["alice", "group:shop"]
tools = ["fixture/*"]

[[gateway.policy]]
principals = ["bob", "group:support"]
tools = ["fixture/get_weather"]
"""


async def hostile(url: str, token: str, n: int = 1000) -> dict[str, int]:
    """n requests that are wrong in the ways a hostile or broken client is: each gets a 4xx
    (never a 5xx, never a hang), and the server serves on. Returns the count per status."""
    good = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}
    kinds: list[tuple[dict[str, str], bytes]] = [
        ({**good, "Content-Type": "application/json"}, b"{not json"),
        ({**good, "Content-Type": "application/json"}, b"x" * (5 * 1024 * 1024)),
        ({**good, "Content-Type": "application/json", "MCP-Protocol-Version": "1999-01-01"}, json.dumps(ping).encode()),
        ({**good, "Content-Type": "application/json", "Origin": "http://evil.example"}, json.dumps(ping).encode()),
        ({**good, "Content-Type": "application/json", "Host": "evil.example"}, json.dumps(ping).encode()),
        ({"Authorization": "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.", "Content-Type": "application/json"}, b"{}"),
        ({"Authorization": "Basic YWxpY2U6eA==", "Content-Type": "application/json"}, b"{}"),
        ({**good, "Content-Type": "text/plain"}, b"hello"),
        ({**good, "Content-Type": "application/json"}, b"[]"),
        ({**good, "Content-Type": "application/json"}, json.dumps({"jsonrpc": "2.0", "id": 1}).encode()),
    ]
    statuses: dict[int, int] = {}
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0)) as http:
        for i in range(n):
            headers, body = kinds[i % len(kinds)]
            if len(body) > 1024 * 1024 and i % 50 != 1:
                headers, body = kinds[0]  # a few oversized bodies, not 100 of 5 MB
            # One connection a request: the server may close a connection after an
            # answer that left the body unread, and a pooled connection closed under the
            # next request is the client's race, not the server's error.
            headers = {**headers, "Connection": "close"}
            try:
                if len(body) > 1024 * 1024:
                    # Its own connection: the server may close it after the 413, and a
                    # pooled connection closed under the next request is the client's race.
                    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0)) as once:
                        r = await once.post(url, content=body, headers=headers)
                else:
                    r = await http.post(url, content=body, headers=headers)
                code = r.status_code
            except httpx2.TransportError:
                # An oversized body may be answered 413 and the connection closed while
                # the client is still sending it: the client sees the close.
                check(len(body) > 1024 * 1024, f"a hostile request of {len(body)} bytes broke the connection")
                code = 413
            statuses[code] = statuses.get(code, 0) + 1
    check(all(400 <= code < 500 for code in statuses), f"hostile requests got {statuses}")
    return {str(k): v for k, v in sorted(statuses.items())}


async def bob_sees_only_his(client: Client) -> dict[str, Any]:
    handles, raw = await search(client, "delete the note called groceries")
    check(all(h == "tool://fixture/get_weather" for h in handles), f"bob saw {handles}")
    check("delete_note" not in raw and "lookup_order" not in raw, "a hidden tool leaked into bob's search")
    card = await client.call_tool("get_tool", {"handle": "tool://fixture/delete_note"})
    unknown = await client.call_tool("get_tool", {"handle": "tool://fixture/no_such_tool"})
    check(card.is_error and unknown.is_error, "hidden and unknown cards are errors")
    check(
        text_of(card).replace("delete_note", "X") == text_of(unknown).replace("no_such_tool", "X"),
        f"a hidden tool is answered like an unknown one: {text_of(card)!r} vs {text_of(unknown)!r}",
    )
    before = len(calls_dir(client))
    r = await client.call_tool("call_tool", {"handle": "fixture/delete_note", "arguments": {"title": "x"}})
    check(r.is_error and "no tool" in text_of(r), f"bob's call of a hidden tool: {text_of(r)}")
    check(len(calls_dir(client)) == before, "bob's call of a hidden tool reached the server")
    ok = await client.call_tool("call_tool", {"handle": "fixture/get_weather", "arguments": {"city": "Oslo"}})
    check(not ok.is_error, f"bob's own tool: {text_of(ok)}")
    return {"handles": handles}


_DIR: Path | None = None


def calls_dir(_client: Client) -> list[dict[str, Any]]:
    assert _DIR is not None
    return calls(_DIR, "delete_note")


async def team(opts: argparse.Namespace) -> dict[str, Any]:
    dir = Path(opts.dir)
    write_upstream(dir)
    (dir / "tokens").write_text("".join(f"{n}:{t}\n" for n, t in TOKENS.items()))
    gw = Gateway(opts.binary, dir, "gw", POLICY, ["--auth-tokens", str(dir / "tokens")])
    out: dict[str, Any] = {"url": gw.url}
    try:
        async with httpx2.AsyncClient() as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            r = await http.post(gw.url, json=body, headers={"Accept": "application/json, text/event-stream"})
            check(r.status_code == 401, f"no token: {r.status_code}")
            check(r.headers.get("www-authenticate", "").startswith("Bearer"), f"challenge: {r.headers}")
            r = await http.post(
                gw.url, json=body, headers={"Authorization": "Bearer wrong-token-000000000", "Accept": "application/json"}
            )
            check(r.status_code == 401 and "invalid_token" in r.headers.get("www-authenticate", ""), "a wrong token")
            check("wrong-token" not in r.text, "the token is not echoed")
            r = await http.post(
                gw.url,
                json=body,
                headers={
                    "Authorization": f"Bearer {TOKENS['alice']}",
                    "Origin": "http://evil.example",
                    "Accept": "application/json, text/event-stream",
                },
            )
            check(r.status_code == 403, f"a foreign Origin: {r.status_code}")

        out["hostile"] = await hostile(gw.url, TOKENS["alice"])
        async with connect(gw.url, TOKENS["alice"]) as alice:
            handles, _ = await search(alice, "delete the note called groceries")
            check("tool://fixture/delete_note" in handles, f"alice's search: {handles}")
            w = await alice.call_tool("call_tool", {"handle": "fixture/get_weather", "arguments": {"city": "Oslo"}})
            check(not w.is_error, f"get_weather: {text_of(w)}")
            # [gateway.tool-calls-per-minute]: two calls a minute of lookup_order each.
            looked = []
            for _ in range(3):
                r = await alice.call_tool("call_tool", {"handle": "fixture/lookup_order", "arguments": {"order_id": "A1"}})
                looked.append(r)
            check(not looked[0].is_error and not looked[1].is_error, "two calls within the limit")
            check(looked[2].is_error and "rate limit" in text_of(looked[2]), f"the third: {text_of(looked[2])}")
            check(len(calls(dir, "lookup_order")) == 2, "the limited call did not reach the server")
            # The SDK drives the MRTR round itself: asks (approve) and retries once.
            r = await alice.call_tool("call_tool", {"handle": "fixture/delete_note", "arguments": {"title": "groceries"}})
            check(not r.is_error and "deleted note groceries" in text_of(r), f"approved call: {text_of(r)}")
            check(len(calls(dir, "delete_note")) == 1, "the approved call ran once")
            # By hand: the state of an approved call, used again.
            args = {"title": "receipts"}
            await approved_once(alice, alice, alice, dir, args, before=1)
            # Another state, retried with other arguments, then altered.
            second = await mrtr_first(alice, "fixture/delete_note", {"title": "taxes"})
            s2 = second.request_state
            assert s2 is not None
            other = await mrtr_retry(alice, "fixture/delete_note", {"title": "everything"}, s2)
            check(other.is_error and "other arguments" in text_of(other), f"re-targeted: {text_of(other)}")
            forged = s2[:-4] + ("AAAA" if not s2.endswith("AAAA") else "BBBB")
            bad = await mrtr_retry(alice, "fixture/delete_note", {"title": "taxes"}, forged)
            check(bad.is_error and "not one this gateway issued" in text_of(bad), f"altered: {text_of(bad)}")
            rejected = await mrtr_retry(alice, "fixture/delete_note", {"title": "taxes"}, s2, decision="reject")
            check(rejected.is_error and "rejected" in text_of(rejected), f"rejected: {text_of(rejected)}")
            check(len(calls(dir, "delete_note")) == 2, "nothing refused ran")
            out["alice"] = handles

        async with connect(gw.url, TOKENS["bob"]) as bob:
            global _DIR
            _DIR = dir
            out["bob"] = await bob_sees_only_his(bob)
            # Alice's approval state is not bob's, even for bob's own tool.
        async with connect(gw.url, TOKENS["alice"], mode=LEGACY) as legacy:
            r = await legacy.call_tool("call_tool", {"handle": "fixture/delete_note", "arguments": {"title": "old"}})
            check(not r.is_error, f"2025-11-25 elicitation: {text_of(r)}")
            check(len(calls(dir, "delete_note")) == 3, "approved by elicitation, ran once")
    finally:
        gw.stop()
    records = audit(dir, "gw")
    principals = {r.get("principal") for r in records}
    check({"alice", "bob"} <= principals, f"audit principals: {principals}")
    check(all("latencyMs" in r for r in records), "every audit line has a latency")
    decisions = [(r["principal"], r["decision"], r["decidedBy"]) for r in records if r["tool"] == "fixture/delete_note"]
    check(("alice", "asked", "gateway") in decisions, f"asked: {decisions}")
    refusals = [r for r in records if r["decidedBy"] == "gateway: approval state"]
    check(len(refusals) == 3, f"the replayed, re-targeted and altered states are audited: {refusals}")
    check(any("already used" in r.get("reason", "") for r in refusals), "the replay's audit line")
    check(any(r.get("upstream") == "ok" for r in records), "upstream status in the audit")
    check(any(r["decidedBy"] == "rate limit" and r["decision"] == "denied" for r in records), "the limit is audited")
    check(("bob", "denied", "policy") in decisions, f"bob's call of a hidden tool is audited: {decisions}")
    out["audit"] = len(records)
    return out


async def replicas(opts: argparse.Namespace) -> dict[str, Any]:
    dir = Path(opts.dir)
    write_upstream(dir)
    (dir / "tokens").write_text(f"alice:{TOKENS['alice']}\n")
    shared = f'\n[gateway]\nkey-file = "{dir / "shared.key"}"\napprovals-db = "{dir / "shared-approvals.sqlite"}"\n'
    a = Gateway(opts.binary, dir, "a", shared, ["--auth-tokens", str(dir / "tokens")])
    b = Gateway(opts.binary, dir, "b", shared, ["--auth-tokens", str(dir / "tokens")])
    try:
        args = {"title": "shared"}
        async with connect(a.url, TOKENS["alice"]) as on_a, connect(b.url, TOKENS["alice"]) as on_b:
            # Asked on a, finished on b, replayed on a.
            await approved_once(on_a, on_b, on_a, dir, args, before=0)
    finally:
        a.stop()
        b.stop()
    mode = (dir / "shared.key").stat().st_mode & 0o777
    check(mode == 0o600, f"key file mode {oct(mode)}")
    return {"a": a.url, "b": b.url, "keyMode": oct(mode)}


async def oauth(opts: argparse.Namespace) -> dict[str, Any]:
    from mcp.client.auth import TokenStorage
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

    class Memory(TokenStorage):
        def __init__(self) -> None:
            self.tokens: Any = None
            self.info: Any = None

        async def get_tokens(self) -> Any:
            return self.tokens

        async def set_tokens(self, tokens: Any) -> None:
            self.tokens = tokens

        async def get_client_info(self) -> Any:
            return self.info

        async def set_client_info(self, info: Any) -> None:
            self.info = info

    dir = Path(opts.dir)
    write_upstream(dir)
    check(OAUTH_SERVER.exists(), f"{OAUTH_SERVER} is missing: run `make oauth-server`")
    gw_port, as_port = free_port(), free_port()
    resource = f"http://127.0.0.1:{gw_port}/mcp"
    issuer = f"http://127.0.0.1:{as_port}"
    provider = subprocess.Popen(
        ["node", str(OAUTH_SERVER), "--port", str(as_port), "--resource", resource],
        stdout=subprocess.PIPE, stderr=open(dir / "oidc.log", "w"), text=True,
    )  # fmt: skip
    assert provider.stdout is not None
    ready = provider.stdout.readline()
    check(ready.startswith("ready "), f"oidc-provider: {ready!r}")
    extra = ["--oauth-issuer", issuer, "--oauth-scope", "tools"]
    gw = Gateway(opts.binary, dir, "gw", POLICY, extra, port=gw_port)
    out: dict[str, Any] = {"url": gw.url, "issuer": issuer}
    try:
        check(gw.url == resource, f"{gw.url} != {resource}")
        async with httpx2.AsyncClient() as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            r = await http.post(resource, json=body, headers={"Accept": "application/json, text/event-stream"})
            check(r.status_code == 401, f"no token: {r.status_code}")
            challenge = r.headers.get("www-authenticate", "")
            m = re.search(r'resource_metadata="([^"]+)"', challenge)
            check(m, f"401 names the resource metadata: {challenge!r}")
            assert m is not None
            meta = (await http.get(m.group(1))).json()
            check(meta["resource"] == resource and meta["authorization_servers"] == [issuer], f"metadata {meta}")
            out["metadata"] = meta
            # A token for another audience.
            t = await http.post(
                f"{issuer}/token",
                data={"grant_type": "client_credentials", "scope": "tools", "resource": "http://other.example/mcp"},
                auth=("alice-bot", "alice-bot-secret-0123456789"),
            )
            check(t.status_code == 200, f"token for another resource: {t.text}")
            r = await http.post(
                resource,
                json=body,
                headers={"Authorization": f"Bearer {t.json()['access_token']}", "Accept": "application/json"},
            )
            check(r.status_code == 401 and "invalid_token" in r.headers.get("www-authenticate", ""), "wrong audience")

        def provider_for(client_id: str) -> ClientCredentialsOAuthProvider:
            return ClientCredentialsOAuthProvider(
                server_url=resource,
                storage=Memory(),
                client_id=client_id,
                client_secret=f"{client_id}-secret-0123456789",
                token_endpoint_auth_method="client_secret_basic",
                issuer=issuer,
            )

        async with connect(resource, auth=provider_for("alice-bot")) as alice:
            handles, _ = await search(alice, "delete the note called groceries")
            check("tool://fixture/delete_note" in handles, f"group shop sees the fixture: {handles}")
            r = await alice.call_tool("call_tool", {"handle": "fixture/delete_note", "arguments": {"title": "oauth"}})
            check(not r.is_error, f"approved over OAuth: {text_of(r)}")
            check(len(calls(dir, "delete_note")) == 1, "ran once")
            out["alice"] = handles
        async with connect(resource, auth=provider_for("bob-bot")) as bob:
            global _DIR
            _DIR = dir
            out["bob"] = await bob_sees_only_his(bob)
        # On a port the system picks, the resource (the tokens' audience) names that port.
        gw0 = Gateway(opts.binary, dir, "gw0", POLICY, extra)
        try:
            async with httpx2.AsyncClient() as http:
                meta = (await http.get(gw0.url.replace("/mcp", "/.well-known/oauth-protected-resource"))).json()
            check(meta["resource"] == gw0.url, f"--http 127.0.0.1:0: {meta['resource']} != {gw0.url}")
        finally:
            gw0.stop()
    finally:
        gw.stop()
        provider.terminate()
        provider.wait(timeout=10)
    principals = {r.get("principal") for r in audit(dir, "gw")}
    check({"alice-bot", "bob-bot"} <= principals, f"audit principals: {principals}")
    return out


async def typescript(opts: argparse.Namespace) -> dict[str, Any]:
    dir = Path(opts.dir)
    write_upstream(dir)
    (dir / "tokens").write_text(f"alice:{TOKENS['alice']}\n")
    gw = Gateway(opts.binary, dir, "gw", "", ["--auth-tokens", str(dir / "tokens")])
    try:
        run = await asyncio.create_subprocess_exec(
            "node", str(ROOT / "tests" / "mcp_http_client.mjs"), gw.url, TOKENS["alice"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(run.communicate(), timeout=300)
        check(run.returncode == 0, f"the TypeScript client failed:\n{out.decode()}\n{err.decode()}")
        summary: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    finally:
        gw.stop()
    check(summary["version"] == LEGACY, f"the TypeScript SDK negotiated {summary['version']}")
    check(len(calls(dir, "delete_note")) == 1, "the approved call ran once")
    principals = {r.get("principal") for r in audit(dir, "gw")}
    check(principals == {"alice"}, f"audit principals: {principals}")
    return summary


async def index(opts: argparse.Namespace) -> dict[str, Any]:
    dir = Path(opts.dir)
    built = subprocess.run(
        [opts.binary, "index", str(ROOT / "tools"), "--out", str(dir / "index")], cwd=ROOT, capture_output=True, text=True
    )
    check(built.returncode == 0, f"toolrag index: {built.stderr}")
    env = dict(os.environ, TOOLRAG_LOG="info")
    proc = subprocess.Popen(
        [opts.binary, "mcp", "--index", str(dir / "index"), "--http", "127.0.0.1:0", "--requests-per-minute", "60"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.stderr is not None
    url = None
    for line in proc.stderr:
        m = re.search(r"MCP over streamable HTTP on (http://\S+/mcp)", line)
        if m:
            url = m.group(1)
            break
    check(url, "toolrag mcp --http printed its address")
    assert url is not None
    out: dict[str, Any] = {"url": url}
    try:
        for mode in (MODERN, LEGACY):
            async with connect(url, mode=mode, approve=None) as client:
                tools = sorted(t.name for t in (await client.list_tools()).tools)
                check(tools == ["get_tool", "search_tools"], f"tools: {tools}")
                handles, _ = await search(client, "read the file /etc/hosts", k=3)
                check(handles, "a search over the index finds tools")
                card = await client.call_tool("get_tool", {"handle": handles[0]})
                check(not card.is_error, f"card: {text_of(card)}")
                out[mode] = handles
        # --requests-per-minute 60: a burst over the bucket gets 429 with Retry-After.
        async with httpx2.AsyncClient() as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}
            statuses = []
            for _ in range(70):
                r = await http.post(url, json=body, headers={"Accept": "application/json, text/event-stream"})
                statuses.append(r.status_code)
                if r.status_code == 429:
                    check(int(r.headers["retry-after"]) >= 1, f"Retry-After: {r.headers}")
                    break
            check(statuses[-1] == 429, f"a burst over the limit: {statuses}")
            out["limitedAfter"] = len(statuses)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    check(proc.returncode == 0, f"toolrag mcp --http exited {proc.returncode} on SIGTERM")
    return out


async def otel(opts: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests"))
    from otlp_receiver import Receiver

    dir = Path(opts.dir)
    write_upstream(dir)
    (dir / "tokens").write_text("".join(f"{n}:{t}\n" for n, t in TOKENS.items()))
    trace, parent, header_trace = os.urandom(16).hex(), os.urandom(8).hex(), os.urandom(16).hex()
    traceparent = f"00-{trace}-{parent}-01"
    with Receiver() as rx:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": rx.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_SERVICE_NAME": "toolrag-otel-test",
        }
        gw = Gateway(opts.binary, dir, "gw", POLICY, ["--auth-tokens", str(dir / "tokens")], env=env)
        try:
            async with connect(gw.url, TOKENS["alice"]) as client:
                meta: Any = {"traceparent": traceparent, "tracestate": "toolrag=test"}
                r = await client.call_tool("search_tools", {"query": "weather in Paris", "k": 3}, meta=meta)
                check(not r.is_error, f"search_tools: {text_of(r)}")
                args = {"handle": "fixture/get_weather", "arguments": {"city": "Paris"}}
                r = await client.call_tool("call_tool", args, meta=meta)
                check(not r.is_error, f"call_tool: {text_of(r)}")
            # The trace context as an HTTP header only (no _meta).
            header = {"traceparent": f"00-{header_trace}-{parent}-01"}
            async with connect(gw.url, TOKENS["alice"], extra_headers=header) as client:
                r = await client.call_tool("get_tool", {"handle": "fixture/get_weather"})
                check(not r.is_error, f"get_tool: {text_of(r)}")
        finally:
            gw.stop()  # SIGTERM: the exporter sends what is left before the process exits

        def named(spans: list[dict[str, Any]], name: str, trace_id: str) -> list[dict[str, Any]]:
            return [s for s in spans if s["name"] == name and s["traceId"] == trace_id]

        spans = rx.wait_for(
            lambda spans: bool(named(spans, "tools/call get_tool", header_trace))
            and bool(named(spans, "tools/call get_weather", trace))
            and bool(named(spans, "search", trace))
        )
    (searched,) = named(spans, "tools/call search_tools", trace)
    check(searched["kind"] == "SERVER" and searched["parentSpanId"] == parent, f"the request span: {searched}")
    attrs = searched["attributes"]
    check(attrs.get("mcp.method.name") == "tools/call" and attrs.get("gen_ai.tool.name") == "search_tools", f"{attrs}")
    check(attrs.get("mcp.protocol.version") == MODERN and attrs.get("network.transport") == "tcp", f"{attrs}")
    (search_span,) = named(spans, "search", trace)
    check(search_span["parentSpanId"] == searched["spanId"], f"the search span is the request's child: {search_span}")
    check(search_span["attributes"].get("toolrag.candidates", 0) >= 1, f"{search_span['attributes']}")
    check(search_span["attributes"].get("toolrag.decision") in ("NAVIGATE", "ABSTAIN"), f"{search_span['attributes']}")
    (called,) = named(spans, "tools/call call_tool", trace)
    check(called["kind"] == "SERVER" and called["parentSpanId"] == parent, f"the call span: {called}")
    (upstream,) = named(spans, "tools/call get_weather", trace)
    check(upstream["kind"] == "CLIENT" and upstream["parentSpanId"] == called["spanId"], f"the upstream span: {upstream}")
    check(upstream["attributes"].get("toolrag.upstream") == "fixture", f"{upstream['attributes']}")
    # The upstream got the trace context in its call's _meta, naming the upstream span.
    (sent,) = calls(dir, "get_weather")
    check(sent["meta"].get("traceparent") == f"00-{trace}-{upstream['spanId']}-01", f"the upstream's _meta: {sent}")
    check(sent["meta"].get("tracestate") == "toolrag=test", f"tracestate passed on: {sent}")
    (carded,) = named(spans, "tools/call get_tool", header_trace)
    check(carded["parentSpanId"] == parent, f"a traceparent header is honoured: {carded}")
    check(searched["resource"].get("service.name") == "toolrag-otel-test", f"resource: {searched['resource']}")
    return {"spans": sorted({s["name"] for s in spans}), "exports": rx.requests}


SCENARIOS = {"team": team, "replicas": replicas, "oauth": oauth, "typescript": typescript, "index": index, "otel": otel}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--binary", required=True)
    parser.add_argument("--dir", required=True)
    opts = parser.parse_args()
    summary = asyncio.run(SCENARIOS[opts.scenario](opts))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
