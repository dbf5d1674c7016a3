// The official TypeScript MCP client (@modelcontextprotocol/sdk from npm, the version in
// tests/mcp-npm/package-lock.json, installed under target/mcp-npm by `make mcp-servers`)
// against `toolrag mcp --upstream ... --http`, on the protocol it speaks (2025-11-25).
//
//   node tests/mcp_http_client.mjs URL TOKEN
//
// Connects over streamable HTTP with a bearer token, answers the gateway's approval
// question (elicitation) with "approve", searches, reads a card, calls a read-only tool
// and a destructive one, and prints one JSON line. Driven by tests/mcp_http_client.py
// (scenario `typescript`).

import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'target', 'mcp-npm', 'package.json'));
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);

const { Client } = await load('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { ElicitRequestSchema } = await load('@modelcontextprotocol/sdk/types.js');

const [url, token] = process.argv.slice(2);
if (!url || !token) {
  process.stderr.write('usage: node tests/mcp_http_client.mjs URL TOKEN\n');
  process.exit(2);
}

function check(cond, what) {
  if (!cond) throw new Error(what);
}

const textOf = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

const client = new Client({ name: 'toolrag-ts-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  asked.push(req.params.message);
  return { action: 'accept', content: { decision: 'approve' } };
});
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
const version = transport.protocolVersion;
const { tools } = await client.listTools();
check(tools.map((t) => t.name).sort().join() === 'call_tool,get_tool,search_tools', `tools: ${tools.map((t) => t.name)}`);

const found = await client.callTool({ name: 'search_tools', arguments: { query: 'delete the note called groceries', k: 5 } });
check(!found.isError, `search: ${textOf(found)}`);
const handles = found.structuredContent.candidates.map((c) => c.nodeId);
check(handles.includes('tool://fixture/delete_note'), `handles: ${handles}`);

const card = await client.callTool({ name: 'get_tool', arguments: { handle: 'tool://fixture/get_weather' } });
check(!card.isError && card.structuredContent.id === 'fixture/get_weather', `card: ${textOf(card)}`);

const weather = await client.callTool({
  name: 'call_tool',
  arguments: { handle: 'fixture/get_weather', arguments: { city: 'Lima' } },
});
check(!weather.isError, `get_weather: ${textOf(weather)}`);

const deleted = await client.callTool({
  name: 'call_tool',
  arguments: { handle: 'fixture/delete_note', arguments: { title: 'from-typescript' } },
});
check(!deleted.isError && textOf(deleted).includes('deleted note from-typescript'), `delete_note: ${textOf(deleted)}`);
check(asked.length === 1 && asked[0].includes('delete_note'), `asked: ${JSON.stringify(asked)}`);

await client.close();
console.log(JSON.stringify({ version, handles, asked: asked.length }));
