// A real OAuth 2.1 authorization server for the toolrag-auth tests: panva's
// oidc-provider (exact version in package-lock.json), installed under
// target/oauth-npm by `make oauth-server`.
//
//   node target/oauth-npm/server.mjs --port P --resource URL [--keys FILE]
//
// - listens on 127.0.0.1:P; the issuer is http://127.0.0.1:P (metadata at
//   /.well-known/oauth-authorization-server and /.well-known/openid-configuration,
//   keys at /jwks, tokens at /token);
// - the client_credentials grant, with resource indicators (RFC 8707): a token
//   requested with `resource=<any http(s) URL>` is a JWT access token (RS256)
//   whose `aud` is that URL; `--resource URL` is the default resource, used
//   when the request names none;
// - scopes `tools` and `admin`; the access token carries `client_id`, `scope`
//   and a `groups` claim (an array) from the client list below;
// - `--keys FILE`: the signing JWKS (private JWKs). If FILE does not exist, a
//   fresh RSA key (a new random `kid`) is generated and written there first,
//   so a test rotates the key by restarting with another file. Without
//   `--keys`, a fresh key is used for this run only;
// - prints one line `ready <issuer>` on stdout once listening; logs go to stderr.
//
// The confidential clients, authenticated at /token by client_secret_basic
// (the default, as the MCP Python SDK's ClientCredentialsOAuthProvider does)
// or, with `--auth-method client_secret_post`, by client_secret_post:
//
//   client_id   client_secret                 groups     scopes allowed
//   alice-bot   alice-bot-secret-0123456789   [shop]     tools admin
//   bob-bot     bob-bot-secret-0123456789     [support]  tools
//   carol-bot   carol-bot-secret-0123456789   []         admin

import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

const CLIENTS = [
  { id: 'alice-bot', groups: ['shop'], scope: 'tools admin' },
  { id: 'bob-bot', groups: ['support'], scope: 'tools' },
  { id: 'carol-bot', groups: [], scope: 'admin' },
];

const secretOf = (id) => `${id}-secret-0123456789`;

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    resource: { type: 'string' },
    keys: { type: 'string' },
    'token-ttl': { type: 'string', default: '600' },
    'auth-method': { type: 'string', default: 'client_secret_basic' },
  },
});
if (!args.port || !args.resource) {
  process.stderr.write('usage: node server.mjs --port P --resource URL [--keys FILE] [--token-ttl SECONDS] [--auth-method client_secret_basic|client_secret_post]\n');
  process.exit(2);
}

function freshKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' };
}

function signingKeys() {
  if (!args.keys) return { keys: [freshKey()] };
  if (!existsSync(args.keys)) {
    writeFileSync(args.keys, JSON.stringify({ keys: [freshKey()] }, null, 2));
  }
  return JSON.parse(readFileSync(args.keys, 'utf8'));
}

const groupsOf = new Map(CLIENTS.map((c) => [c.id, c.groups]));
const issuer = `http://127.0.0.1:${args.port}`;

const provider = new Provider(issuer, {
  clients: CLIENTS.map((c) => ({
    client_id: c.id,
    client_secret: secretOf(c.id),
    grant_types: ['client_credentials'],
    redirect_uris: [],
    response_types: [],
    scope: c.scope,
    token_endpoint_auth_method: args['auth-method'],
  })),
  jwks: signingKeys(),
  scopes: ['tools', 'admin'],
  cookies: { keys: ['toolrag-test-cookie-key-not-secret'] },
  ttl: { ClientCredentials: Number(args['token-ttl']) },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => args.resource,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resourceIndicator) => ({
        scope: 'tools admin',
        audience: resourceIndicator,
        accessTokenTTL: Number(args['token-ttl']),
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  extraTokenClaims: async (_ctx, token) => {
    const groups = groupsOf.get(token.clientId);
    return groups ? { groups } : undefined;
  },
});

provider.on('server_error', (_ctx, err) => process.stderr.write(`server_error: ${err.stack}\n`));

const server = provider.listen(Number(args.port), '127.0.0.1', () => {
  process.stdout.write(`ready ${issuer}\n`);
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
