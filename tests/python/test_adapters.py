"""The framework adapters, end to end against the real frameworks.

Each agent runs on its framework's own offline test model (LangChain's
GenericFakeChatModel, LlamaIndex's MockFunctionCallingLLM, PydanticAI's
FunctionModel) or, for the Anthropic and OpenAI SDKs, on the real client whose
HTTP transport is an in-process fake server (httpx2.MockTransport): nothing
leaves the machine and no API key is needed. The model searches, toolrag finds
the tool with the wheel's embedding model, and the tool found is the one that
runs.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import toolrag

# The frameworks are in requirements-adapters.txt: the tests run wherever it is
# installed (CI), and say what is missing elsewhere.
langchain_core = pytest.importorskip("langchain_core")
langgraph_bigtool = pytest.importorskip("langgraph_bigtool")
llama_index_core = pytest.importorskip("llama_index.core")
pydantic_ai = pytest.importorskip("pydantic_ai")
anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")

import toolrag.anthropic  # noqa: E402
import toolrag.langgraph  # noqa: E402
import toolrag.llama_index  # noqa: E402
import toolrag.openai  # noqa: E402
import toolrag.pydantic_ai  # noqa: E402

# --- The tools: plain functions that record their calls ----------------------

CALLS: list[tuple[str, dict[str, Any]]] = []


def get_weather(city: str) -> str:
    """Current weather for a city: temperature, rain and wind."""
    CALLS.append(("get_weather", {"city": city}))
    return f"Light rain in {city}, 14 C."


def send_email(to: str, subject: str, body: str) -> str:
    """Send an email to one recipient with a subject and a body."""
    CALLS.append(("send_email", {"to": to, "subject": subject, "body": body}))
    return f"Email sent to {to}."


def read_file(path: str) -> str:
    """Read a text file from the local disk and return its contents."""
    CALLS.append(("read_file", {"path": path}))
    return "127.0.0.1 localhost"


def create_calendar_event(title: str, start: str) -> str:
    """Create an event in the user's calendar at a date and time."""
    CALLS.append(("create_calendar_event", {"title": title, "start": start}))
    return f"Event '{title}' created."


def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert an amount of money from one currency to another at today's rate."""
    CALLS.append(
        (
            "convert_currency",
            {"amount": amount, "from": from_currency, "to": to_currency},
        )
    )
    return f"{amount} {from_currency} = {amount * 0.92:.2f} {to_currency}"


def search_web(query: str) -> str:
    """Search the web and return the top results with their titles and links."""
    CALLS.append(("search_web", {"query": query}))
    return "1. toolrag - tool retrieval"


def translate_text(text: str, target_language: str) -> str:
    """Translate a text into another language."""
    CALLS.append(("translate_text", {"text": text, "target_language": target_language}))
    return "Hola"


FUNCTIONS: list[Callable[..., str]] = [
    get_weather,
    send_email,
    read_file,
    create_calendar_event,
    convert_currency,
    search_web,
    translate_text,
]


@pytest.fixture(autouse=True)
def _clear_calls() -> Iterator[None]:
    CALLS.clear()
    yield
    CALLS.clear()


# --- LangGraph (langgraph-bigtool) --------------------------------------------

from langchain_core.language_models.fake_chat_models import (  # noqa: E402
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import StructuredTool  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402
from pydantic import Field  # noqa: E402


class RecordingFakeChatModel(GenericFakeChatModel):
    """LangChain's GenericFakeChatModel, answering its scripted messages, that
    also records the tools bound for each call (bigtool binds the retrieved
    tools before every model call)."""

    bound: list[list[dict[str, Any]]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.bound.append([convert_to_openai_tool(t)["function"] for t in tools])
        return self


def bound_names(model: RecordingFakeChatModel) -> list[list[str]]:
    return [[t["name"] for t in call] for call in model.bound]


def tool_call(name: str, args: dict[str, Any], id: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": id}])


def langchain_registry() -> dict[str, Any]:
    """A bigtool registry: LangChain tools and, as bigtool allows, one plain function."""
    registry: dict[str, Any] = {}
    for fn in FUNCTIONS:
        key = fn.__name__.split("_")[-1]  # weather, email, file, event, ...
        registry[key] = fn if fn is read_file else StructuredTool.from_function(fn)
    return registry


def test_langgraph_bigtool_agent_retrieves_then_calls_the_tool() -> None:
    registry = langchain_registry()
    index = toolrag.Index.build(registry)
    assert sorted(t["id"] for t in index) == sorted(registry)
    retrieve, aretrieve = toolrag.langgraph.retrievers(index, k=1, tool_registry=registry)
    llm = RecordingFakeChatModel(
        messages=iter(
            [
                tool_call("retrieve_tools", {"query": "send an email"}, "call-1"),
                tool_call(
                    "send_email",
                    {"to": "landlord@example.com", "subject": "Rent", "body": "Paid."},
                    "call-2",
                ),
                AIMessage("I emailed your landlord."),
            ]
        )
    )
    agent = langgraph_bigtool.create_agent(
        llm,
        registry,
        retrieve_tools_function=retrieve,
        retrieve_tools_coroutine=aretrieve,
    ).compile()

    state = agent.invoke({"messages": "tell my landlord the rent is paid"})

    assert state["selected_tool_ids"] == ["email"]
    tool_messages = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert tool_messages[0].content == "Available tools: ['send_email']"
    assert tool_messages[1].content == "Email sent to landlord@example.com."
    assert CALLS == [
        (
            "send_email",
            {"to": "landlord@example.com", "subject": "Rent", "body": "Paid."},
        )
    ]
    # Only the search tool first; then the tool toolrag found, and no other.
    assert bound_names(llm)[:2] == [
        ["retrieve_tools"],
        ["retrieve_tools", "send_email"],
    ]
    search_schema = llm.bound[0][0]
    assert search_schema["description"] == toolrag.langgraph.RETRIEVE_TOOLS_DESCRIPTION
    assert search_schema["parameters"]["required"] == ["query"]
    assert state["messages"][-1].content == "I emailed your landlord."


def test_langgraph_bigtool_agent_async_uses_the_coroutine() -> None:
    registry = langchain_registry()
    index = toolrag.Index.build(registry)
    queries: list[str] = []
    aretrieve = toolrag.langgraph.async_retriever(index, k=2, tool_registry=registry)

    async def retrieve_tools(query: str) -> list[str]:
        queries.append(query)
        return await aretrieve(query)

    retrieve_tools.__doc__ = aretrieve.__doc__
    llm = RecordingFakeChatModel(
        messages=iter(
            [
                tool_call("retrieve_tools", {"query": "book a meeting in my calendar"}, "c1"),
                tool_call(
                    "create_calendar_event",
                    {"title": "Dentist", "start": "2026-12-10T15:00"},
                    "c2",
                ),
                AIMessage("Booked."),
            ]
        )
    )
    agent = langgraph_bigtool.create_agent(llm, registry, retrieve_tools_coroutine=retrieve_tools).compile()

    state = asyncio.run(agent.ainvoke({"messages": "dentist thursday 3pm"}))

    assert queries == ["book a meeting in my calendar"]
    assert state["selected_tool_ids"][0] == "event"
    assert len(state["selected_tool_ids"]) == 2
    assert "create_calendar_event" in bound_names(llm)[1]
    assert CALLS == [("create_calendar_event", {"title": "Dentist", "start": "2026-12-10T15:00"})]


def test_langgraph_create_agent_builds_the_index_from_uuid_keys() -> None:
    # The registry of bigtool's README: uuid keys.
    registry = {str(uuid.uuid4()): StructuredTool.from_function(fn) for fn in FUNCTIONS}
    key_of = {tool.name: key for key, tool in registry.items()}
    llm = RecordingFakeChatModel(
        messages=iter(
            [
                tool_call("retrieve_tools", {"query": "how many euros for 100 dollars"}, "c1"),
                tool_call(
                    "convert_currency",
                    {"amount": 100, "from_currency": "USD", "to_currency": "EUR"},
                    "c2",
                ),
                AIMessage("92 euros."),
            ]
        )
    )
    agent = toolrag.langgraph.create_agent(llm, registry, k=1).compile()

    state = agent.invoke({"messages": "100 USD in EUR?"})

    assert state["selected_tool_ids"] == [key_of["convert_currency"]]
    assert CALLS == [("convert_currency", {"amount": 100, "from": "USD", "to": "EUR"})]


def test_langgraph_retriever_returns_registry_keys() -> None:
    registry = langchain_registry()
    index = toolrag.Index.build(registry)
    retrieve = toolrag.langgraph.retriever(index, k=3)
    cases = {
        "is it going to rain in Lima tomorrow?": "weather",
        "show me the contents of the file /etc/hosts": "file",
        "translate this sentence into Spanish": "text",
        "look up the latest news about Rust on the internet": "web",
    }
    for query, want in cases.items():
        got = retrieve(query)
        assert len(got) == 3 and set(got) <= set(registry), got
        assert got[0] == want, (query, got)
    assert asyncio.run(toolrag.langgraph.async_retriever(index, k=1)("rain in Lima")) == ["weather"]


def test_langgraph_retriever_rejects_an_index_of_other_ids() -> None:
    registry = langchain_registry()
    index = toolrag.Index.build(list(registry.values()))  # ids tools/<name>
    with pytest.raises(ValueError, match=r"Index\.build\(tool_registry\)"):
        toolrag.langgraph.retriever(index, tool_registry=registry)


# --- LlamaIndex ----------------------------------------------------------------

from llama_index.core.agent.workflow import FunctionAgent, ReActAgent  # noqa: E402
from llama_index.core.base.llms.types import (  # noqa: E402
    ChatMessage,
    MessageRole,
    ToolCallBlock,
)
from llama_index.core.llms.mock import MockFunctionCallingLLM  # noqa: E402
from llama_index.core.objects import ObjectRetriever  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402


def test_llama_index_function_agent_calls_the_retrieved_tool() -> None:
    tools: list[Any] = [FunctionTool.from_defaults(fn) for fn in FUNCTIONS[:4]]
    tools += FUNCTIONS[4:]  # plain functions, as agents take them too
    retriever = toolrag.llama_index.ToolRetriever.from_tools(tools, k=2)
    assert isinstance(retriever, ObjectRetriever)
    offered: list[list[str]] = []

    def respond(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        names = [t.metadata.name for t in kwargs.get("tools") or []]
        offered.append(names)
        if any(m.role == MessageRole.TOOL for m in messages):
            return ChatMessage(role="assistant", content=f"Done: {messages[-1].content}")
        call = ToolCallBlock(
            tool_call_id="call-1",
            tool_name="get_weather",
            tool_kwargs={"city": "Lima"},
        )
        return ChatMessage(role="assistant", blocks=[call])

    agent = FunctionAgent(
        tool_retriever=retriever,
        llm=MockFunctionCallingLLM(response_generator=respond),
    )

    async def main() -> Any:  # the workflow needs a running event loop
        return await agent.run("is it going to rain in Lima tomorrow?")

    response = asyncio.run(main())

    assert offered[0][0] == "get_weather" and len(offered[0]) == 2
    assert "send_email" not in offered[0]
    assert CALLS == [("get_weather", {"city": "Lima"})]
    assert str(response) == "Done: Light rain in Lima, 14 C."


def test_llama_index_react_agent_sees_only_the_retrieved_tools() -> None:
    tools = [FunctionTool.from_defaults(fn) for fn in FUNCTIONS]
    retriever = toolrag.llama_index.ToolRetriever.from_tools(tools, k=1)
    prompts: list[str] = []

    def respond(messages: list[ChatMessage], **kwargs: Any) -> ChatMessage:
        prompts.append(str(messages[0].content))  # the system prompt lists the tools
        if any(str(m.content).startswith("Observation:") for m in messages):
            return ChatMessage(
                role="assistant",
                content="Thought: I can answer without using any more tools.\nAnswer: 100 USD is 92.00 EUR.",
            )
        return ChatMessage(
            role="assistant",
            content="Thought: I need to use a tool to help me answer the question.\n"
            "Action: convert_currency\n"
            'Action Input: {"amount": 100, "from_currency": "USD", "to_currency": "EUR"}',
        )

    agent = ReActAgent(
        tool_retriever=retriever,
        llm=MockFunctionCallingLLM(response_generator=respond, is_chat_model=True),
    )

    async def main() -> Any:
        return await agent.run("how many euros do I get for 100 dollars?")

    response = asyncio.run(main())

    assert "convert_currency" in prompts[0]
    for other in ("get_weather", "send_email", "read_file", "translate_text"):
        assert other not in prompts[0]
    assert CALLS == [("convert_currency", {"amount": 100, "from": "USD", "to": "EUR"})]
    assert "92.00 EUR" in str(response)


def test_llama_index_retriever_over_a_mapping_and_a_saved_index(tmp_path: Any) -> None:
    tools = {f"office/{fn.__name__}": FunctionTool.from_defaults(fn) for fn in FUNCTIONS}
    toolrag.Index.build(tools, tmp_path / "index")
    index = toolrag.Index.open(tmp_path / "index")
    retriever = toolrag.llama_index.ToolRetriever(index, tools, k=1)

    assert retriever.retrieve("mail the report to Ana")[0] is tools["office/send_email"]
    found = asyncio.run(retriever.aretrieve("show me the contents of the file /etc/hosts"))
    assert found == [tools["office/read_file"]]
    # Agents look a called tool up again by its name: that always finds it.
    assert retriever.retrieve("search_web") == [tools["office/search_web"]]
    nodes = retriever.retriever.retrieve("weather in Oslo")
    assert nodes[0].node.metadata["toolrag_id"] == "office/get_weather"
    assert nodes[0].score is not None and nodes[0].score > 0


def test_llama_index_retriever_rejects_missing_tools() -> None:
    tools = [FunctionTool.from_defaults(fn) for fn in FUNCTIONS]
    index = toolrag.Index.build(tools)
    with pytest.raises(ValueError, match="translate_text"):
        toolrag.llama_index.ToolRetriever(index, tools[:-1])


# --- PydanticAI -------------------------------------------------------------------

from pydantic_ai import Agent, Tool  # noqa: E402
from pydantic_ai.capabilities import ToolSearch  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolSearchReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.tools import ToolDefinition  # noqa: E402


def scripted_model(search: list[str], call: tuple[str, dict[str, Any]], seen: list[list[str]]) -> FunctionModel:
    """A FunctionModel that searches for tools, calls one, then answers,
    recording the tools it is offered at each step."""

    def step(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append([t.name for t in info.function_tools])
        n = sum(isinstance(m, ModelResponse) for m in messages)
        if n == 0:
            return ModelResponse(parts=[ToolCallPart("search_tools", {"queries": search})])
        if n == 1:
            return ModelResponse(parts=[ToolCallPart(call[0], call[1])])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(step)


def discovered(messages: list[ModelMessage]) -> list[str]:
    return [
        match["name"]
        for m in messages
        for part in m.parts
        if isinstance(part, ToolSearchReturnPart)
        for match in part.discovered_tools
    ]


def test_pydantic_ai_tool_search_reveals_the_tool_toolrag_finds() -> None:
    seen: list[list[str]] = []
    model = scripted_model(
        ["email someone"],
        ("send_email", {"to": "ana@example.com", "subject": "Hi", "body": "Lunch?"}),
        seen,
    )
    agent = Agent(
        model,
        tools=[Tool(fn, defer_loading=True) for fn in FUNCTIONS],
        capabilities=[toolrag.pydantic_ai.tool_search(k=1)],
    )

    result = agent.run_sync("ask Ana out for lunch by mail")

    assert result.output == "done"
    assert seen[0] == ["search_tools"]  # every tool deferred, nothing else offered
    assert discovered(result.all_messages()) == ["send_email"]
    assert sorted(seen[1]) == ["search_tools", "send_email"]
    assert CALLS == [("send_email", {"to": "ana@example.com", "subject": "Hi", "body": "Lunch?"})]


def test_pydantic_ai_search_fn_over_an_index_merges_queries() -> None:
    tools = [Tool(fn, defer_loading=True) for fn in FUNCTIONS]
    index = toolrag.Index.build(tools)
    seen: list[list[str]] = []
    model = scripted_model(
        ["weather forecast", "convert dollars to euros"],
        ("get_weather", {"city": "Quito"}),
        seen,
    )
    agent = Agent(
        model,
        tools=tools,
        capabilities=[ToolSearch(strategy=toolrag.pydantic_ai.search_fn(index, k=2))],
    )

    result = agent.run_sync("weather in Quito, and the price in euros")

    assert sorted(discovered(result.all_messages())) == [
        "convert_currency",
        "get_weather",
    ]
    assert CALLS == [("get_weather", {"city": "Quito"})]


def test_pydantic_ai_search_fn_indexes_the_corpus_and_follows_its_changes() -> None:
    search = toolrag.pydantic_ai.search_fn(k=1)

    def definitions(fns: list[Callable[..., str]]) -> list[ToolDefinition]:
        return [Tool(fn).tool_def for fn in fns]

    corpus = definitions(FUNCTIONS[:3])
    assert asyncio.run(search(None, ["weather in Rome"], corpus)) == ["get_weather"]  # type: ignore[arg-type]
    # A tool that the corpus does not hold is never returned.
    assert asyncio.run(search(None, ["translate into French"], corpus)) != ["translate_text"]  # type: ignore[arg-type]
    corpus = definitions(FUNCTIONS)
    assert asyncio.run(search(None, ["translate into French"], corpus)) == ["translate_text"]  # type: ignore[arg-type]
    assert asyncio.run(search(None, ["  "], corpus)) == []  # type: ignore[arg-type]


# --- Anthropic ----------------------------------------------------------------------

from anthropic.types import (  # noqa: E402
    ToolParam,
    ToolResultBlockParam,
    ToolSearchToolResultBlock,
    ToolSearchToolResultBlockParam,
)
from pydantic import TypeAdapter  # noqa: E402


def anthropic_message(*content: dict[str, Any]) -> dict[str, Any]:
    stop = "tool_use" if any(c["type"] == "tool_use" for c in content) else "end_turn"
    return {
        "id": f"msg_{uuid.uuid4().hex[:8]}",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": list(content),
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def test_anthropic_client_side_tool_search_end_to_end() -> None:
    index = toolrag.Index.build([Tool(fn).tool_def for fn in FUNCTIONS])
    requests: list[dict[str, Any]] = []

    def server(request: Any) -> Any:
        """The Messages API as a script: search, call the referenced tool, answer."""
        body = json.loads(request.content)
        requests.append(body)
        last = body["messages"][-1]["content"]
        if len(requests) == 1:
            reply = anthropic_message(
                {
                    "type": "tool_use",
                    "id": "toolu_search",
                    "name": "tool_search",
                    "input": {"query": "convert dollars to euros"},
                }
            )
        elif len(requests) == 2:
            references = [c for block in last for c in block["content"]]
            reply = anthropic_message(
                {
                    "type": "tool_use",
                    "id": "toolu_call",
                    "name": references[0]["tool_name"],
                    "input": {
                        "amount": 100,
                        "from_currency": "USD",
                        "to_currency": "EUR",
                    },
                }
            )
        else:
            reply = anthropic_message({"type": "text", "text": last[0]["content"]})
        return httpx2.Response(200, json=reply)

    client = anthropic.Anthropic(
        api_key="test",
        base_url="http://anthropic.test",
        http_client=httpx2.Client(transport=httpx2.MockTransport(server)),
        max_retries=0,
    )
    tools = [toolrag.anthropic.search_tool(), *toolrag.anthropic.deferred_tools(index)]
    messages: list[Any] = [{"role": "user", "content": "100 USD in EUR?"}]
    functions = {fn.__name__: fn for fn in FUNCTIONS}

    response = client.messages.create(model="claude-test", max_tokens=512, tools=tools, messages=messages)
    results = toolrag.anthropic.respond(index, response, k=1)
    messages += [
        {"role": "assistant", "content": response.content},
        {"role": "user", "content": results},
    ]
    response = client.messages.create(model="claude-test", max_tokens=512, tools=tools, messages=messages)
    assert toolrag.anthropic.respond(index, response) == []  # no search this time
    call = response.content[0]
    assert call.type == "tool_use"
    output = functions[call.name](**call.input)
    messages += [
        {"role": "assistant", "content": response.content},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": output}],
        },
    ]
    response = client.messages.create(model="claude-test", max_tokens=512, tools=tools, messages=messages)

    # What went over the (fake) wire: the deferred tools, then the references.
    sent_tools = requests[0]["tools"]
    assert sent_tools[0]["name"] == "tool_search" and "defer_loading" not in sent_tools[0]
    assert {t["name"] for t in sent_tools[1:]} == {fn.__name__ for fn in FUNCTIONS}
    assert all(t["defer_loading"] is True for t in sent_tools[1:])
    assert requests[1]["messages"][-1]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_search",
            "content": [{"type": "tool_reference", "tool_name": "convert_currency"}],
        }
    ]
    assert CALLS == [("convert_currency", {"amount": 100, "from": "USD", "to": "EUR"})]
    assert response.content[0].type == "text"
    assert response.content[0].text == "100 USD = 92.00 EUR"


def test_anthropic_blocks_match_the_sdk_types() -> None:
    index = toolrag.Index.build([Tool(fn).tool_def for fn in FUNCTIONS])
    hits = index.search("weather in Lima", k=2)

    result = toolrag.anthropic.tool_result("toolu_1", hits)
    TypeAdapter(ToolResultBlockParam).validate_python(result)
    content = result["content"]
    assert isinstance(content, list)
    assert content[0] == {"type": "tool_reference", "tool_name": "get_weather"}
    assert toolrag.anthropic.tool_result("toolu_2", [])["content"] == [
        {"type": "text", "text": toolrag.anthropic.NO_MATCH}
    ]

    server_shape = toolrag.anthropic.tool_search_tool_result("srvtoolu_1", hits)
    TypeAdapter(ToolSearchToolResultBlockParam).validate_python(server_shape)
    block = ToolSearchToolResultBlock.model_validate(server_shape)
    assert [r.tool_name for r in block.content.tool_references] == [h.name for h in hits]  # type: ignore[union-attr]

    for tool in [
        toolrag.anthropic.search_tool(),
        *toolrag.anthropic.deferred_tools(index),
    ]:
        TypeAdapter(ToolParam).validate_python(tool)
    weather = next(t for t in toolrag.anthropic.deferred_tools(index) if t["name"] == "get_weather")
    assert weather["input_schema"]["required"] == ["city"]


# --- OpenAI -------------------------------------------------------------------------

from openai.types.responses import (  # noqa: E402
    FunctionToolParam,
    ResponseToolSearchOutputItemParam,
    ResponseToolSearchOutputItemParamParam,
    ToolSearchToolParam,
)


def openai_response(*output: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"resp_{uuid.uuid4().hex[:8]}",
        "object": "response",
        "created_at": 1764806400,
        "model": "gpt-test",
        "status": "completed",
        "output": list(output),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def test_openai_client_executed_tool_search_end_to_end() -> None:
    index = toolrag.Index.build(FUNCTIONS)
    requests: list[dict[str, Any]] = []

    def server(request: Any) -> Any:
        """The Responses API as a script: search, call a loaded tool, answer."""
        body = json.loads(request.content)
        requests.append(body)
        if len(requests) == 1:
            reply = openai_response(
                {
                    "type": "tool_search_call",
                    "id": "tsc_1",
                    "call_id": "call_search",
                    "execution": "client",
                    "arguments": {"query": "read a file from disk"},
                    "status": "completed",
                }
            )
        elif len(requests) == 2:
            loaded = body["input"][-1]["tools"]
            reply = openai_response(
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_read",
                    "name": loaded[0]["name"],
                    "arguments": json.dumps({"path": "/etc/hosts"}),
                    "status": "completed",
                }
            )
        else:
            reply = openai_response(
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {
                            "type": "output_text",
                            "text": body["input"][-1]["output"],
                            "annotations": [],
                        }
                    ],
                }
            )
        return httpx2.Response(200, json=reply)

    client = openai.OpenAI(
        api_key="test",
        base_url="http://openai.test/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(server)),
        max_retries=0,
    )
    tools = [toolrag.openai.search_tool(), *toolrag.openai.deferred_tools(index)]
    items: list[Any] = [{"role": "user", "content": "what's in /etc/hosts?"}]
    functions = {fn.__name__: fn for fn in FUNCTIONS}

    response = client.responses.create(model="gpt-test", tools=tools, input=items)
    outputs = toolrag.openai.respond(index, response, k=2)
    items += [*response.output, *outputs]
    response = client.responses.create(model="gpt-test", tools=tools, input=items)
    assert toolrag.openai.respond(index, response) == []
    call = response.output[0]
    assert call.type == "function_call"
    output = functions[call.name](**json.loads(call.arguments))
    items += [
        *response.output,
        {"type": "function_call_output", "call_id": call.call_id, "output": output},
    ]
    response = client.responses.create(model="gpt-test", tools=tools, input=items)

    sent_tools = requests[0]["tools"]
    assert sent_tools[0] == toolrag.openai.search_tool()
    assert {t["name"] for t in sent_tools[1:]} == set(functions)
    assert all(t["defer_loading"] is True for t in sent_tools[1:])
    search_call, search_output = requests[1]["input"][-2:]
    assert search_call["type"] == "tool_search_call"
    assert search_output["type"] == "tool_search_output"
    assert search_output["call_id"] == "call_search"
    assert search_output["execution"] == "client"
    assert search_output["tools"][0]["name"] == "read_file"
    assert len(search_output["tools"]) == 2
    assert CALLS == [("read_file", {"path": "/etc/hosts"})]
    assert response.output_text == "127.0.0.1 localhost"


def test_openai_items_match_the_sdk_types() -> None:
    index = toolrag.Index.build(FUNCTIONS)
    hits = index.search("send an email", k=3)

    item = toolrag.openai.tool_search_output("call_1", hits)
    TypeAdapter(ResponseToolSearchOutputItemParamParam).validate_python(item)
    model = ResponseToolSearchOutputItemParam.model_validate(item)
    names = [t.name for t in model.tools]  # type: ignore[union-attr]
    assert names[0] == "send_email" and len(names) == 3
    TypeAdapter(ToolSearchToolParam).validate_python(toolrag.openai.search_tool())
    for tool in toolrag.openai.deferred_tools(index):
        TypeAdapter(FunctionToolParam).validate_python(tool)
    assert toolrag.openai.tool_search_output("call_2", [])["tools"] == []


def test_respond_and_arespond_answer_every_search_of_a_response() -> None:
    index = toolrag.Index.build(FUNCTIONS)
    message = anthropic.types.Message.model_validate(
        anthropic_message(
            {"type": "text", "text": "Let me look for tools."},
            {"type": "tool_use", "id": "toolu_a", "name": "tool_search", "input": {"query": "weather in Oslo"}},
            {"type": "tool_use", "id": "toolu_b", "name": "tool_search", "input": {"queries": ["translate", "French"]}},
            {"type": "tool_use", "id": "toolu_c", "name": "get_weather", "input": {"city": "Oslo"}},
        )
    )
    results = toolrag.anthropic.respond(index, message, k=1)
    assert [r["tool_use_id"] for r in results] == ["toolu_a", "toolu_b"]  # not the get_weather call
    assert [r["content"] for r in results] == [
        [{"type": "tool_reference", "tool_name": "get_weather"}],
        [{"type": "tool_reference", "tool_name": "translate_text"}],
    ]
    assert asyncio.run(toolrag.anthropic.arespond(index, message, k=1)) == results

    response = openai.types.responses.Response.model_validate(
        openai_response(
            {
                "type": "tool_search_call",
                "id": "tsc_a",
                "call_id": "call_a",
                "execution": "client",
                "arguments": {"query": "email my boss"},
                "status": "completed",
            },
            {
                "type": "tool_search_call",
                "id": "tsc_b",
                "call_id": None,
                "execution": "server",  # the server ran this one: nothing to answer
                "arguments": {"query": "calendar"},
                "status": "completed",
            },
        )
    )
    outputs = toolrag.openai.respond(index, response, k=1)
    loaded: list[Any] = [(o["call_id"], o["tools"]) for o in outputs]
    assert [(call, [t["name"] for t in tools]) for call, tools in loaded] == [("call_a", ["send_email"])]
    assert asyncio.run(toolrag.openai.arespond(index, response, k=1)) == outputs
