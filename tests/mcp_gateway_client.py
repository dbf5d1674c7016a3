"""The official MCP Python client (`mcp` on PyPI) driving `toolrag mcp --upstream` (the gateway).

Usage: python tests/mcp_gateway_client.py SCENARIO --binary TOOLRAG --upstream CONFIG --index DIR
           [--config TOML] [--elicit approve|reject|none] [--state FILE] [--dir DIR]

Each scenario spawns the gateway over stdio, checks one behaviour end to end and prints one
JSON summary line on stdout; a failed check raises, so the exit status is non-zero. The
gateway's stderr (its log) goes to this process's stderr. Driven by
tests/integration/mcp_gateway.rs; needs the venv of `make mcp-client`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def handles(result) -> list[str]:
    check(not result.is_error, f"search_tools failed: {text_of(result)}")
    return [c["nodeId"] for c in result.structured_content["candidates"]]


class Gateway:
    """One gateway process and a client session to it."""

    def __init__(self, opts, elicit: str | None = None):
        self.opts = opts
        self.elicit = elicit if elicit is not None else opts.elicit
        self.asked: list[str] = []

    async def __aenter__(self):
        args = ["mcp", "--upstream", self.opts.upstream, "--index", self.opts.index]
        if self.opts.config:
            args += ["--config", self.opts.config]
        params = StdioServerParameters(command=self.opts.binary, args=args, env=dict(os.environ))
        self._stdio = stdio_client(params)
        read, write = await self._stdio.__aenter__()
        callback = None
        if self.elicit in ("approve", "reject"):
            decision = self.elicit

            async def callback(ctx, params: types.ElicitRequestParams):
                self.asked.append(params.message)
                return types.ElicitResult(action="accept", content={"decision": decision})

        self._session = ClientSession(read, write, elicitation_callback=callback)
        self.session = await self._session.__aenter__()
        init = await self.session.initialize()
        check(init.server_info.name == "toolrag-gateway", f"server {init.server_info.name}")
        return self

    async def __aexit__(self, *exc):
        if exc[0] is not None and not issubclass(exc[0], asyncio.CancelledError):
            # A failed check: report it now, since closing the session can wait
            # on the gateway for as long as the test runs.
            import traceback

            traceback.print_exception(*exc)
            sys.stderr.flush()
            os._exit(1)
        await self._session.__aexit__(*exc)
        await self._stdio.__aexit__(*exc)

    async def search(self, query: str, k: int = 5):
        return await self.session.call_tool("search_tools", {"query": query, "k": k})

    async def card(self, handle: str):
        return await self.session.call_tool("get_tool", {"handle": handle})

    async def call(self, handle: str, arguments: dict | None = None):
        args = {"handle": handle}
        if arguments is not None:
            args["arguments"] = arguments
        return await self.session.call_tool("call_tool", args)


def calls_of(opts) -> list[dict]:
    path = Path(opts.state + ".calls")
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def until(what: str, probe, timeout: float = 30.0, every: float = 0.1):
    start = time.monotonic()
    while True:
        value = await probe()
        if value:
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise AssertionError(f"not within {timeout} s: {what}")
        await asyncio.sleep(every)


# --- scenarios ---------------------------------------------------------------------------


async def real(opts):
    """Real reference servers: search, then get_tool, then call_tool, with the real result."""
    summary = {}
    async with Gateway(opts, elicit="approve") as gw:
        tools = sorted(t.name for t in (await gw.session.list_tools()).tools)
        check(tools == ["call_tool", "get_tool", "search_tools"], f"tools {tools}")
        listed = {t.name: t for t in (await gw.session.list_tools()).tools}
        check(listed["call_tool"].input_schema["required"] == ["handle"], "call_tool needs handle")
        for name, tool in listed.items():
            check(tool.title, f"{name} has a title")
            for prop, spec in tool.input_schema["properties"].items():
                check(isinstance(spec.get("type"), str), f"{name}.{prop} has a plain type: {spec}")
        for name in ("search_tools", "get_tool"):
            check(listed[name].output_schema["type"] == "object", f"{name} has an outputSchema")

        found = handles(await gw.search("what time is it in Tokyo right now"))
        check("tool://time/get_current_time" in found, f"time candidates {found}")
        card = await gw.card("tool://time/get_current_time")
        check(not card.is_error, text_of(card))
        check("timezone" in card.structured_content["inputSchema"]["properties"], "the card has the schema")
        check("source" not in card.structured_content, "cards carry no path of the serving machine")
        now = await gw.call("tool://time/get_current_time", {"timezone": "Asia/Tokyo"})
        check(not now.is_error, text_of(now))
        check("Asia/Tokyo" in text_of(now), f"time result {text_of(now)}")
        summary["time"] = text_of(now)

        found = handles(await gw.search("list the files in a directory", k=5))
        check("tool://filesystem/list_directory" in found, f"filesystem candidates {found}")
        listing = await gw.call("tool://filesystem/list_directory", {"path": opts.dir})
        check(not listing.is_error, text_of(listing))
        check("hello.txt" in text_of(listing), f"listing {text_of(listing)}")
        summary["listing"] = text_of(listing)

        found = handles(await gw.search("remember that Ana works at Acme: add an entity to the knowledge graph"))
        check("tool://memory/create_entities" in found, f"memory candidates {found}")
        created = await gw.call(
            "tool://memory/create_entities",
            {"entities": [{"name": "Ana", "entityType": "person", "observations": ["works at Acme"]}]},
        )
        check(not created.is_error and "Ana" in text_of(created), text_of(created))
        check(not gw.asked, f"creating an entity (not destructive, closed world) needs no approval: {gw.asked}")
        graph = await gw.call("tool://memory/read_graph", {})
        check(not graph.is_error and "Acme" in text_of(graph), f"graph {text_of(graph)}")
        deleted = await gw.call("tool://memory/delete_entities", {"entityNames": ["Ana"]})
        check(not deleted.is_error, text_of(deleted))
        check(len(gw.asked) == 1 and "delete_entities" in gw.asked[0] and "Ana" in gw.asked[0], f"asked {gw.asked}")
        graph = await gw.call("tool://memory/read_graph", {})
        check(not graph.is_error and "Acme" not in text_of(graph), f"graph after the delete {text_of(graph)}")
        summary["asked"] = len(gw.asked)
    return summary


async def sync(opts):
    """A tool added upstream becomes searchable, and no request fails meanwhile."""
    async with Gateway(opts) as gw:
        check("tool://fixture/count_umbrellas" not in handles(await gw.search("count the umbrellas")), "not yet")
        failures = []
        searches = 0
        stop = asyncio.Event()

        async def hammer():
            nonlocal searches
            while not stop.is_set():
                r = await gw.search("weather forecast for Lisbon")
                searches += 1
                if r.is_error or not r.structured_content["candidates"]:
                    failures.append(text_of(r))
                r = await gw.call("tool://fixture/get_weather", {"city": "Lisbon"})
                if r.is_error:
                    failures.append(text_of(r))

        task = asyncio.create_task(hammer())
        changed = await gw.call("tool://fixture/change_tools", {"add": "count_umbrellas"})
        check(not changed.is_error, text_of(changed))

        async def searchable():
            return "tool://fixture/count_umbrellas" in handles(await gw.search("count the umbrellas of the warehouse", k=3))

        seconds = await until("the new tool is searchable", searchable)
        await asyncio.sleep(0.3)
        stop.set()
        await task
        check(not failures, f"requests failed during the sync: {failures[:3]}")
        check(searches > 0, "searches ran during the sync")
    return {"seconds": seconds, "searches": searches, "failures": len(failures)}


async def quarantine(opts):
    """A poisoned tool is neither searchable nor callable; the others are."""
    async with Gateway(opts) as gw:
        found = handles(await gw.search("look up the status of an order by its id", k=10))
        check("tool://fixture/lookup_order" not in found, f"quarantined tool found: {found}")
        card = await gw.card("tool://fixture/lookup_order")
        check(card.is_error and "quarantined" in text_of(card) and "hidden-instructions" in text_of(card), text_of(card))
        call = await gw.call("tool://fixture/lookup_order", {"order_id": "A-1"})
        check(call.is_error and "quarantined" in text_of(call), text_of(call))
        ok = await gw.call("tool://fixture/get_weather", {"city": "Lisbon"})
        check(not ok.is_error, text_of(ok))
    check(all(c["tool"] != "lookup_order" for c in calls_of(opts)), "the quarantined tool was called")
    return {"refused": text_of(call)}


async def rug_pull(opts):
    """A definition that changes after it was pinned is quarantined while the gateway runs."""
    async with Gateway(opts) as gw:
        card = await gw.card("tool://fixture/delete_note")
        check(not card.is_error, text_of(card))
        changed = await gw.call("tool://fixture/change_tools", {"rug_pull": True})
        check(not changed.is_error, text_of(changed))

        async def quarantined():
            c = await gw.card("tool://fixture/delete_note")
            return c.is_error and "changed since it was pinned" in text_of(c)

        await until("the changed tool is quarantined", quarantined)
        call = await gw.call("tool://fixture/delete_note", {"title": "groceries"})
        check(call.is_error and "--accept fixture/delete_note" in text_of(call), text_of(call))
    check(all(c["tool"] != "delete_note" for c in calls_of(opts)), "the pulled tool was called")
    return {"refused": text_of(call)}


async def accepted(opts):
    """After --accept, the changed definition is the trusted one."""
    async with Gateway(opts) as gw:
        card = await gw.card("tool://fixture/delete_note")
        check(not card.is_error, text_of(card))
        check("upload_to" in card.structured_content["inputSchema"]["properties"], "the new schema")
    return {}


async def approve(opts):
    async with Gateway(opts, elicit="approve") as gw:
        r = await gw.call("tool://fixture/delete_note", {"title": "groceries"})
        check(not r.is_error and text_of(r) == "deleted note groceries", text_of(r))
        check(len(gw.asked) == 1, f"asked {gw.asked}")
        check("delete_note" in gw.asked[0] and "groceries" in gw.asked[0] and "fixture" in gw.asked[0], gw.asked[0])
        # A read-only tool is not asked about.
        w = await gw.call("tool://fixture/get_weather", {"city": "Lisbon"})
        check(not w.is_error and w.structured_content == {"city": "Lisbon", "forecast": "sunny, 21 C"}, str(w))
        check(len(gw.asked) == 1, "read-only tools need no approval")
    check([c["tool"] for c in calls_of(opts)] == ["delete_note", "get_weather"], f"calls {calls_of(opts)}")
    return {"question": gw.asked[0]}


async def reject(opts):
    async with Gateway(opts, elicit="reject") as gw:
        r = await gw.call("tool://fixture/delete_note", {"title": "groceries"})
        check(r.is_error and "rejected" in text_of(r), text_of(r))
        check(len(gw.asked) == 1, f"asked {gw.asked}")
    check(all(c["tool"] != "delete_note" for c in calls_of(opts)), "a rejected call reached the server")
    return {"answer": text_of(r)}


async def no_elicitation(opts):
    async with Gateway(opts, elicit="none") as gw:
        r = await gw.call("tool://fixture/delete_note", {"title": "groceries"})
    return {"isError": bool(r.is_error), "text": text_of(r), "calls": [c["tool"] for c in calls_of(opts)]}


async def output_guard(opts):
    async with Gateway(opts) as gw:
        r = await gw.call("tool://fixture/fetch_page", {"url": "https://example.com"})
    meta = r.meta or {}
    return {"isError": bool(r.is_error), "texts": [c.text for c in r.content if c.type == "text"],
            "guard": meta.get("io.toolrag/outputGuard")}


async def restart(opts):
    async with Gateway(opts) as gw:
        crashed = await gw.call("tool://fixture/crash", {})
        check(crashed.is_error, f"the crash call: {text_of(crashed)}")

        async def works():
            w = await gw.call("tool://fixture/get_weather", {"city": "Porto"})
            return not w.is_error and w.structured_content["city"] == "Porto"

        seconds = await until("the restarted server answers", works, timeout=30, every=0.2)
    return {"crash": text_of(crashed), "seconds": seconds}


async def invalid_arguments(opts):
    async with Gateway(opts) as gw:
        r = await gw.call("tool://fixture/get_weather", {"town": "Lisbon"})
        check(r.is_error and "input schema" in text_of(r), text_of(r))
        missing = await gw.call("tool://fixture/no_such_tool", {})
        check(missing.is_error and "search_tools" in text_of(missing), text_of(missing))
    check(not calls_of(opts), f"an invalid call reached the server: {calls_of(opts)}")
    return {"error": text_of(r)}


async def http(opts):
    """A streamable-HTTP upstream (with a required header) behind the gateway."""
    async with Gateway(opts) as gw:
        found = handles(await gw.search("count the widgets on shelf 3 of the fixture warehouse", k=5))
        check("tool://remote/fixture_tool_03" in found, f"candidates {found}")
        card = await gw.card("tool://remote/fixture_tool_03")
        check(not card.is_error and "shelf" in card.structured_content["inputSchema"]["properties"], text_of(card))
        r = await gw.call("tool://remote/fixture_tool_03", {"shelf": "A-3"})
        check(not r.is_error and text_of(r) == "7", text_of(r))
    return {"found": found}



async def learn(opts):
    """Learning from use: searches and calls through the gateway, `toolrag learn`, then a request
    of the same kind ranks the called tool first; a failed call teaches nothing; --forget undoes.
    (One call of get_current_time after "what time is it in Tokyo" is learnt too, but does not
    move it above convert_time, which BM25 puts well ahead: a learnt request moves its tool only
    part of the way, the more the more calls taught it.)"""
    import subprocess

    current, observe = "tool://time/get_current_time", "tool://memory/add_observations"
    probes = {"remember that Bob likes coffee": observe, "remember that Carol prefers email": observe}
    usage = Path(opts.index) / "usage.jsonl"

    def rank(found: list[str], handle: str) -> int:
        return found.index(handle) + 1 if handle in found else 99

    def toolrag(*args: str) -> str:
        out = subprocess.run([opts.binary, *args], capture_output=True, text=True, timeout=120)
        check(out.returncode == 0, f"toolrag {args}: {out.stderr}")
        return out.stdout

    async def ranks(gw) -> dict[str, int]:
        return {q: rank(handles(await gw.search(q, k=10)), h) for q, h in probes.items()}

    summary = {}
    async with Gateway(opts) as gw:
        # Ana exists before anyone searches: a call no search offered is not recorded.
        made = await gw.call("tool://memory/create_entities",
                             {"entities": [{"name": "Ana", "entityType": "person", "observations": []}]})
        check(not made.is_error, text_of(made))
        summary["before"] = await ranks(gw)
        check(all(r > 1 for r in summary["before"].values()), f"before learning {summary['before']}")

        check(current in handles(await gw.search("what time is it in Tokyo", k=5)), "time offered")
        now = await gw.call(current, {"timezone": "Asia/Tokyo"})
        check(not now.is_error, text_of(now))
        check(observe in handles(await gw.search("remember that Ana likes tea", k=10)), "observe offered")
        noted = await gw.call(observe, {"observations": [{"entityName": "Ana", "contents": ["likes tea"]}]})
        check(not noted.is_error, text_of(noted))
        missing = str(Path(opts.dir) / "missing.txt")
        found = handles(await gw.search("show me the contents of missing.txt", k=5))
        check("tool://filesystem/read_text_file" in found, f"read offered: {found}")
        failed = await gw.call("tool://filesystem/read_text_file", {"path": missing})
        check(failed.is_error, "reading a missing file fails")

        records = [json.loads(line) for line in usage.read_text().splitlines()]
        summary["recorded"] = [(r["tool"], r["outcome"]) for r in records]
        check(summary["recorded"] == [("time/get_current_time", "succeeded"),
                                      ("memory/add_observations", "succeeded"),
                                      ("filesystem/read_text_file", "tool-error")],
              f"usage records {summary['recorded']}")
        check(records[0]["request"] == "what time is it in Tokyo", f"request {records[0]}")
        check(records[0]["handles"][:2] == ["time/convert_time", "time/get_current_time"]
              or "time/get_current_time" in records[0]["handles"], f"handles {records[0]}")
        check("Asia/Tokyo" not in usage.read_text() and all("arguments" not in r for r in records),
              "arguments are never recorded")
        check(records[1]["request"] == "remember that something something",
              f"argument values are taken out of the request: {records[1]['request']}")

        learnt = json.loads(toolrag("learn", "--index", opts.index, "--json"))
        summary["learnt"] = sorted(learnt["learnt"])
        check(summary["learnt"] == ["memory/add_observations", "time/get_current_time"],
              f"learnt {learnt}")
        check(learnt["learn"]["unsuccessful"] == 1, f"report {learnt['learn']}")
        card = json.loads(toolrag("tools", "show", "time/get_current_time", "--index", opts.index))
        check(card.get("learnt") == [{"request": "what time is it in something", "calls": 1}],
              f"card {card.get('learnt')}")

        # The running gateway follows the rebuilt index.
        async def learnt_now():
            summary["after"] = await ranks(gw)
            return all(r == 1 for r in summary["after"].values())
        await until("the called tools rank first", learnt_now)

        toolrag("learn", "--index", opts.index, "--forget", "memory/add_observations")

        async def forgotten():
            summary["forgotten"] = await ranks(gw)
            return all(summary["forgotten"][q] >= summary["before"][q] for q in probes)
        await until("the forgotten tool is no higher than before", forgotten)
        learnt = json.loads((Path(opts.index) / "learnt.json").read_text())
        check(list(learnt["tools"]) == ["time/get_current_time"], f"the other tool keeps its learning: {learnt}")
    return summary



SCENARIOS = {
    "http": http,
    "real": real,
    "sync": sync,
    "quarantine": quarantine,
    "rug-pull": rug_pull,
    "accepted": accepted,
    "approve": approve,
    "reject": reject,
    "no-elicitation": no_elicitation,
    "output-guard": output_guard,
    "restart": restart,
    "invalid-arguments": invalid_arguments,
    "learn": learn,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--binary", required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--index", required=True)
    parser.add_argument("--config")
    parser.add_argument("--elicit", default="none", choices=["approve", "reject", "none"])
    parser.add_argument("--state", default="")
    parser.add_argument("--dir", default="")
    opts = parser.parse_args()
    try:
        summary = asyncio.run(asyncio.wait_for(SCENARIOS[opts.scenario](opts), timeout=240))
    except BaseException:  # noqa: BLE001 - report, then leave without waiting on the sessions' cleanup
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
