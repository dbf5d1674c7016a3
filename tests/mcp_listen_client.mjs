// The official TypeScript MCP client (@modelcontextprotocol/sdk, installed under
// target/mcp-npm by `make mcp-servers`) hearing notifications/tools/list_changed from
// `toolrag mcp --upstream ... --http`. The SDK speaks 2025-11-25, which has no
// subscriptions/listen: its client listens on the session's standalone stream (GET),
// which it opens by itself after the handshake.
//
//   node tests/mcp_listen_client.mjs URL TOKEN
//
// Asks the upstream to add a tool (call_tool on conformance/change_tools, see
// tests/mcp_conformance_upstream.py), waits for list_changed, prints one JSON line.
// Driven by tests/integration/mcp_conformance.rs.

import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'target', 'mcp-npm', 'package.json'));
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);

const { Client } = await load('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { ToolListChangedNotificationSchema } = await load('@modelcontextprotocol/sdk/types.js');

const [url, token] = process.argv.slice(2);
if (!url || !token) {
  process.stderr.write('usage: node tests/mcp_listen_client.mjs URL TOKEN\n');
  process.exit(2);
}

const client = new Client({ name: 'toolrag-ts-listen', version: '1.0.0' }, { capabilities: {} });
let heard = 0;
let wake = () => {};
client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
  heard += 1;
  wake();
});
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
await client.connect(transport);
const version = transport.protocolVersion;
const listChanged = client.getServerCapabilities()?.tools?.listChanged === true;
// The standalone stream opens after the handshake, on its own: give it a moment.
await new Promise((r) => setTimeout(r, 1000));
const changed = await client.callTool({
  name: 'call_tool',
  arguments: { handle: 'conformance/change_tools', arguments: { add: 'feed_the_cat' } },
});
if (changed.isError) throw new Error(`change_tools: ${JSON.stringify(changed)}`);
const timer = new Promise((_, reject) => setTimeout(() => reject(new Error('no list_changed in 60 s')), 60000));
if (heard === 0) await Promise.race([new Promise((r) => { wake = r; }), timer]);
await client.close();
console.log(JSON.stringify({ version, listChanged, heard }));
process.exit(0);
