// A real OAuth 2.1 authorization server on loopback for tests/python/test_mcp_oauth.py:
// oidc-provider with one public client (authorization code + PKCE, no secret), resource
// indicators (RFC 8707) whose access tokens are JWTs bound to the resource asked for, and an
// interaction that logs in and consents at once, as the account named by `login_hint`
// (a stand-in for the person at the browser).
// Usage: node oauth-issuer.mjs <redirect URI>; listens on ISSUER_PORT (default: a free port),
// prints its issuer URL as one line, and writes its private signing key (JWK) to the file
// named by ISSUER_KEY_FILE, from which the tests sign tokens the issuer would never hand out
// (expired ones). On SIGHUP it rotates its keys as an issuer does: a new key signs from then
// on, published first in its JWKS beside the old ones; the file then holds the new key, and
// a line `rotated <kid>` is printed.
import { generateKeyPairSync } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";

import Provider from "oidc-provider";

// The product's scopes (routes/src/scope.rs), those of the public API.
const SCOPES = [
  "read:machines", "read:netdiag", "report:pdf", "write:netdiag", "read:flows", "read:alerts",
  "write:alerts", "read:monitors", "read:inventory", "read:security", "read:databases",
  "read:firewall", "read:dns", "read:files", "read:network",
];
// Each account's customer account, the claim NETOPS_OAUTH_TENANT_CLAIM names.
const TENANTS = { alice: "acme", bob: "globex" };

const [redirectUri] = process.argv.slice(2);
// The signing keys, the one that signs first.
let keys = [];
function rotate() {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const kid = `issuer-key-${keys.length + 1}`;
  keys = [{ ...privateKey.export({ format: "jwk" }), kid, alg: "ES256", use: "sig" }, ...keys];
  if (process.env.ISSUER_KEY_FILE) writeFileSync(process.env.ISSUER_KEY_FILE, JSON.stringify(keys[0]));
}
rotate();

// The provider of the current keys: a new one is made on rotation (its keys are fixed).
function authorizationServer(issuer) {
  const provider = new Provider(issuer, {
    jwks: { keys },
    clients: [
      {
        client_id: "netops-tests",
        application_type: "native",
        token_endpoint_auth_method: "none",
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        id_token_signed_response_alg: "ES256",
      },
    ],
    scopes: ["openid", "offline_access"],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        // Any http(s) resource gets an audience-bound JWT: the server under test must refuse
        // the tokens of another resource itself.
        getResourceServerInfo: (_ctx, resourceIndicator) => ({
          scope: SCOPES.join(" "),
          audience: resourceIndicator,
          accessTokenTTL: 300,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "ES256" } },
        }),
      },
    },
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    extraTokenClaims: (_ctx, token) =>
      token.kind === "AccessToken" ? { tenant: TENANTS[token.accountId] } : undefined,
  });
  // The interaction: log in as the `login_hint` account, then consent to all that is asked.
  provider.use(async (ctx, next) => {
    if (ctx.method !== "GET" || !ctx.path.startsWith("/interaction/")) return next();
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const { prompt, params, session } = details;
    let result;
    if (prompt.name === "login") {
      const account = params.login_hint in TENANTS ? params.login_hint : "alice";
      result = { login: { accountId: account } };
    } else {
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
      const missing = prompt.details;
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
        grant.addResourceScope(indicator, scopes.join(" "));
      }
      result = { consent: { grantId: await grant.save() } };
    }
    const to = await provider.interactionResult(ctx.req, ctx.res, result, {
      mergeWithLastSubmission: false,
    });
    ctx.redirect(to);
  });
  return provider.callback();
}

const server = createServer();
server.listen(Number(process.env.ISSUER_PORT ?? 0), "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  let handle = authorizationServer(issuer);
  server.on("request", (req, res) => handle(req, res));
  process.on("SIGHUP", () => {
    rotate();
    handle = authorizationServer(issuer);
    console.log(`rotated ${keys[0].kid}`);
  });
  console.log(issuer);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
