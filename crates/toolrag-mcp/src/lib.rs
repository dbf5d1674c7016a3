//! The MCP server: two tools, `search_tools` and `get_tool`, so that an MCP
//! client can search a large registry lazily instead of listing all of it.
//!
//! Built on `rmcp`, the official Rust MCP SDK; the transport (stdio for
//! `toolrag mcp`, or [`streamable_http`]) is the caller's choice. It reads
//! the engine's [`LiveIndex`], as the HTTP API does, so it follows index
//! rebuilds the same way, and it applies the serving core's limits, checks
//! and errors ([`toolrag_serve`]), which it shares with the HTTP API without
//! depending on it. A user error ([`ApiError::User`]) is a tool result with
//! `isError`, which the model can read and correct; an internal one is a
//! JSON-RPC error.
//!
//! Over the network, it listens where the binary binds it
//! ([`streamable_http`]) and connects, each only when configured, to its
//! upstream MCP servers ([`upstream`]: streamable HTTP; stdio ones are child
//! processes) and to Redis (`[gateway] state`, [`shared`]); OAuth's issuer
//! is `toolrag-auth`'s.
#![warn(missing_docs)]

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::Deserialize;
use tracing::Instrument;

use toolrag_engine::live::LiveIndex;
use toolrag_engine::search::SearchRequest;
use toolrag_serve::{check_k, check_query, ApiError};

pub mod conformance;
pub mod jsonrpc;
pub mod limits;
pub mod lists;
pub mod sessions;
pub mod shared;
pub mod streamable_http;
pub mod telemetry;
pub mod upstream;

// The HTTP front end's first checks of a request's head.
mod edge;

/// The arguments of `search_tools`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchToolsArgs {
    /// What the user wants done, in plain words, e.g. "read the file /etc/hosts".
    /// At most 4096 characters.
    pub query: String,
    /// How many tools to return, 1 to 100 (default 10).
    // `with`: a plain `integer` in the schema, not `["integer", "null"]`;
    // `default` keeps it optional.
    #[schemars(range(min = 1, max = 100), with = "i64")]
    #[serde(default)]
    pub k: Option<i64>,
    /// Only tools in this namespace, e.g. "filesystem".
    #[schemars(with = "String")]
    #[serde(default)]
    pub namespace: Option<String>,
    /// Only tools annotated read-only (no side effects).
    #[schemars(with = "bool")]
    #[serde(default)]
    pub read_only: Option<bool>,
}

/// The arguments of `get_tool`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetToolArgs {
    /// A handle from `search_tools` ("tool://filesystem/read_text_file") or a
    /// bare tool id ("filesystem/read_text_file").
    pub handle: String,
}

/// The toolrag MCP server over a live index.
#[derive(Debug, Clone)]
pub struct McpServer {
    index: Arc<LiveIndex>,
    pinned: Vec<String>,
    tool_router: ToolRouter<Self>,
}

const SEARCH_TOOLS: &str = "Find the tools that fit a request, among all the tools of the registry. \
Returns a candidate set: `candidates` (best first, each with `nodeId` = a tool:// handle and a short \
`note`), and `retrieval` with the scores and a suggested `decision` (NAVIGATE, or ABSTAIN with the \
reason when no tool fits). Call get_tool with a handle to read that tool's full card before using it. \
Example: {\"query\": \"read the file /etc/hosts\", \"k\": 5}. \
Edge cases: an empty query or k outside 1..100 is an error; a query no tool fits returns ABSTAIN, not an error.";

const GET_TOOL: &str = "The full card of one tool: its description, input schema, annotations, \
examples and edge cases. Takes a handle returned by search_tools. \
Example: {\"handle\": \"tool://filesystem/read_text_file\"}. \
Edge cases: an unknown handle is an error naming it. Not for finding tools: use search_tools.";

#[tool_router]
impl McpServer {
    /// A server over `index`.
    pub fn new(index: Arc<LiveIndex>) -> McpServer {
        McpServer {
            index,
            pinned: Vec::new(),
            tool_router: Self::tool_router(),
        }
    }

    /// Pins these tools into every search (the `pinned` list of `toolrag.toml`).
    pub fn with_pinned(mut self, pinned: Vec<String>) -> McpServer {
        self.pinned = pinned;
        self
    }

    /// `search_tools`: the candidate set for a request.
    #[tool(
        title = "Search tools",
        description = SEARCH_TOOLS,
        output_schema = output_schema(OutputSchema::CandidateSet),
        annotations(title = "Search tools", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn search_tools(
        &self,
        Parameters(args): Parameters<SearchToolsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let span = telemetry::request_span("search_tools", &ctx);
        search(&self.index, &self.pinned, args, None)
            .instrument(span)
            .await
    }

    /// `get_tool`: a tool's full card.
    #[tool(
        title = "Get a tool card",
        description = GET_TOOL,
        output_schema = output_schema(OutputSchema::ToolCard),
        annotations(title = "Get a tool card", read_only_hint = true, open_world_hint = false)
    )]
    pub async fn get_tool(
        &self,
        Parameters(args): Parameters<GetToolArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let span = telemetry::request_span("get_tool", &ctx);
        match card_of(&self.index, &args.handle) {
            Ok(card) => Ok(CallToolResult::structured(card)),
            Err(message) => {
                telemetry::mark_error(&span);
                Ok(tool_error(&message))
            }
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for McpServer {
    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, ErrorData> {
        Ok(lists::tools(self.tool_router.list_all(), &ctx))
    }

    async fn discover(
        &self,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, ErrorData> {
        Ok(lists::discover(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("toolrag", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "toolrag indexes a large tool registry. Call search_tools with the user's \
                 request to get a few candidate tool handles, then get_tool on the one you \
                 mean to use to read its full card.",
            )
    }
}

/// The structured results of toolrag's MCP tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputSchema {
    /// `search_tools`: the Khipu candidate set.
    CandidateSet,
    /// `get_tool`: a tool's card, without `source`.
    ToolCard,
}

/// The `outputSchema` of a tool's structured result: the HTTP API's schema
/// of the same value (`openapi.json`, kept true by the server's tests) with
/// every `$ref` inlined, so the MCP and HTTP answers are described once.
pub fn output_schema(which: OutputSchema) -> Arc<serde_json::Map<String, serde_json::Value>> {
    use serde_json::Value;
    static OPENAPI: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
        serde_json::from_str(toolrag_serve::OPENAPI).expect("openapi.json is JSON")
    });
    fn inline(v: &Value, components: &Value) -> Value {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    let name = r.rsplit('/').next().unwrap_or_default();
                    return inline(&components[name], components);
                }
                Value::Object(
                    m.iter()
                        .map(|(k, v)| (k.clone(), inline(v, components)))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(|v| inline(v, components)).collect()),
            other => other.clone(),
        }
    }
    let components = &OPENAPI["components"]["schemas"];
    let name = match which {
        OutputSchema::CandidateSet => "CandidateSet",
        OutputSchema::ToolCard => "ToolCard",
    };
    let mut schema = inline(&components[name], components);
    if which == OutputSchema::ToolCard {
        // Cards over MCP leave out `source` (a path of the serving machine).
        if let Some(m) = schema.as_object_mut() {
            if let Some(Value::Object(p)) = m.get_mut("properties") {
                p.remove("source");
            }
            if let Some(Value::Array(r)) = m.get_mut("required") {
                r.retain(|k| k != "source");
            }
        }
    }
    match schema {
        Value::Object(m) => Arc::new(m),
        _ => unreachable!("openapi.json's {name} is an object schema"),
    }
}

/// `search_tools` over `index`, shared by the index server and the gateway
/// (`toolrag-gateway`), which passes the tools the caller may see.
pub async fn search(
    index: &Arc<LiveIndex>,
    pinned: &[String],
    args: SearchToolsArgs,
    visible: Option<Arc<std::collections::HashSet<String>>>,
) -> Result<CallToolResult, ErrorData> {
    let mut req = match search_request(args, pinned) {
        Ok(r) => r,
        Err(e) => {
            telemetry::mark_error(&tracing::Span::current());
            return answer_error(e);
        }
    };
    req.visible = visible;
    let span = telemetry::search_span(req.k);
    let index = index.clone();
    let in_search = span.clone();
    let answer = tokio::task::spawn_blocking(move || in_search.in_scope(|| index.search(&req)))
        .await
        .map_err(|e| ErrorData::internal_error(format!("the search failed: {e}"), None))?;
    match answer {
        Ok(a) => {
            let value = to_value(&a.value)?;
            span.record(
                "toolrag.decision",
                value["retrieval"]["decision"].as_str().unwrap_or_default(),
            );
            span.record(
                "toolrag.candidates",
                value["candidates"]
                    .as_array()
                    .map_or(0, |c| i64::try_from(c.len()).unwrap_or(i64::MAX)),
            );
            Ok(CallToolResult::structured(value))
        }
        Err(e) => {
            telemetry::mark_error(&span);
            answer_error(ApiError::from(e))
        }
    }
}

/// A tool's card for `get_tool`: the tool as indexed, without `source`
/// (where the definition was read, which is a path of the serving machine).
pub fn card_of(index: &LiveIndex, handle: &str) -> Result<serde_json::Value, String> {
    let s = index.snapshot();
    match s.tool(handle.trim()) {
        Some(t) => {
            let mut card = serde_json::to_value(t).map_err(|e| e.to_string())?;
            if let Some(m) = card.as_object_mut() {
                m.remove("source");
            }
            Ok(card)
        }
        None => Err(format!(
            "no tool `{handle}` in the index; use a handle returned by search_tools"
        )),
    }
}

fn search_request(args: SearchToolsArgs, pinned: &[String]) -> Result<SearchRequest, ApiError> {
    let k = check_k(args.k)?;
    check_query(&args.query)?;
    Ok(SearchRequest {
        query: args.query,
        k,
        namespaces: args.namespace.into_iter().collect(),
        read_only: args.read_only.unwrap_or(false),
        pin: pinned.to_vec(),
        ..SearchRequest::default()
    })
}

/// A user error is a tool result with `isError` (the model can read it and
/// try again); an internal one is a JSON-RPC error.
fn answer_error(e: ApiError) -> Result<CallToolResult, ErrorData> {
    match e {
        ApiError::User { message, .. } => Ok(tool_error(&message)),
        other => Err(ErrorData::internal_error(other.message().to_string(), None)),
    }
}

fn tool_error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<serde_json::Value, ErrorData> {
    serde_json::to_value(v).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}
