/**
 * A real OpenID provider for tests: `oidc-provider` in-process on a free loopback port.
 *
 * - One registered confidential client (`client_secret_basic`, PKCE required) with the
 *   caller's redirect URIs, allowed the authorization-code and client-credentials grants.
 * - Resource indicators: the `audience` resource gets RS256 JWT access tokens (`at+jwt`)
 *   with the given scopes, e.g. through `clientCredentialsToken()`.
 * - Interactive login without a person: the provider's interaction URL signs in a test
 *   account at once (the subject set by `loginAs`, or the one `completeLogin` names), and
 *   consent is granted automatically for the registered client.
 * - `mintAccessToken` signs a token for any subject/scope with the provider's own key, for
 *   API tests that need user tokens (the provider itself only issues client tokens).
 */
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { importJWK, type JWK, SignJWT } from 'jose'
import Provider, { type Configuration, errors, type KoaContextWithOIDC } from 'oidc-provider'
import { freePort } from './env.ts'

export interface OidcProviderOptions {
  /** Redirect URIs of the registered client (the relying party's callback URLs). */
  redirectUris: string[]
  /** Client id (default `gatehouse-test`). */
  clientId?: string
  /** Client secret (default: random per start). */
  clientSecret?: string
  /** Loopback port (default: a free one). */
  port?: number
  /** Resource indicator (audience) for JWT access tokens (default `https://api.test`). */
  audience?: string
  /** Scopes the resource grants (default `['api']`). */
  scopes?: string[]
  /** Extra ID-token claims per subject, e.g. `{ alice: { groups: ['admins'] } }`. */
  accounts?: Record<string, Record<string, unknown>>
  /**
   * Also register a public native client (a CLI): no secret, PKCE, a loopback redirect on any
   * port (RFC 8252), the authorization-code and refresh-token grants; with `offline_access` it
   * gets a refresh token.
   */
  nativeClientId?: string
  /** Also register a public client (no secret, PKCE, authorization code) with this id and the same redirect URIs. */
  publicClientId?: string
}

export interface AccessTokenOptions {
  sub: string
  /** Space-separated scopes (default: every scope of the resource). */
  scope?: string
  audience?: string
  /** Lifetime in seconds (default 3600; negative gives an expired token). */
  expiresIn?: number
  /** Extra claims, e.g. `{ groups: ['admins'] }`. */
  claims?: Record<string, unknown>
}

export interface OidcProvider {
  /** `http://127.0.0.1:PORT` (openid-client needs `allowInsecureRequests` for it). */
  issuer: string
  jwksUri: string
  clientId: string
  clientSecret: string
  audience: string
  /** The subject the next browser login signs in as (default `alice`), with extra claims. */
  loginAs(subject: string, claims?: Record<string, unknown>): void
  /**
   * Follow an authorization URL through the provider (login and consent happen at once)
   * and return the URL it finally redirects to: the client's callback with `code` and `state`.
   */
  completeLogin(authorizationUrl: string, subject?: string): Promise<string>
  /** A real client-credentials grant at the token endpoint; returns the JWT access token. */
  clientCredentialsToken(scope?: string): Promise<string>
  /**
   * Rotate the signing key: a new key signs from now on (provider and `mintAccessToken`); the
   * old ones stay in the JWKS unless `retire` drops them. Returns the new key id. Interactive
   * sessions at the provider are forgotten (a new provider instance serves).
   */
  rotateKeys(options?: { retire?: boolean }): Promise<string>
  /** Sign an access token for any subject with the provider's current key (same `iss`, `kid`, `typ`). */
  mintAccessToken(options: AccessTokenOptions): Promise<string>
  stop(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

async function newSigningKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const jwk = { ...(privateKey.export({ format: 'jwk' }) as JWK), kid: randomUUID(), alg: 'RS256', use: 'sig' }
  return { jwk: jwk as JWK & { kid: string }, signingKey: await importJWK(jwk, 'RS256') }
}

/**
 * @example
 * const op = await startOidcProvider({ redirectUris: ['http://127.0.0.1:8080/callback'], audience: 'https://api.test' })
 * after(() => op.stop())
 * const token = await op.mintAccessToken({ sub: 'alice', scope: 'api' })
 */
export async function startOidcProvider(options: OidcProviderOptions): Promise<OidcProvider> {
  const port = options.port ?? (await freePort())
  const issuer = `http://127.0.0.1:${port}`
  const clientId = options.clientId ?? 'gatehouse-test'
  const clientSecret = options.clientSecret ?? randomBytes(32).toString('base64url')
  const audience = options.audience ?? 'https://api.test'
  const scopes = options.scopes ?? ['api']
  const accounts = new Map(Object.entries(options.accounts ?? {}))
  let loginSubject = 'alice'

  // The first key signs; the others stay published for verifiers until retired.
  let keys = [await newSigningKey()]

  const configure = (): Configuration => ({
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.redirectUris,
        grant_types: ['authorization_code', 'client_credentials'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
        scope: ['openid', 'profile', 'email', ...scopes].join(' '),
      },
      ...(options.nativeClientId
        ? [
            {
              client_id: options.nativeClientId,
              application_type: 'native' as const,
              redirect_uris: ['http://127.0.0.1/callback'],
              grant_types: ['authorization_code', 'refresh_token'],
              response_types: ['code' as const],
              token_endpoint_auth_method: 'none' as const,
              scope: ['openid', 'offline_access', 'profile', 'email', ...scopes].join(' '),
            },
          ]
        : []),
      ...(options.publicClientId === undefined
        ? []
        : [
            {
              client_id: options.publicClientId,
              redirect_uris: options.redirectUris,
              grant_types: ['authorization_code'],
              response_types: ['code' as const],
              token_endpoint_auth_method: 'none' as const,
              scope: 'openid profile email',
            },
          ]),
    ],
    scopes: ['openid', 'offline_access', 'profile', 'email', ...scopes],
    jwks: { keys: keys.map((k) => k.jwk as never) },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    pkce: { required: () => true },
    ttl: {
      AccessToken: 3600,
      AuthorizationCode: 60,
      ClientCredentials: 3600,
      Grant: 3600,
      IdToken: 3600,
      Interaction: 600,
      Session: 3600,
    },
    claims: { openid: ['sub'], profile: ['name', 'groups'], email: ['email', 'email_verified'] },
    conformIdTokenClaims: false,
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, name: sub, email: `${sub}@example.test`, email_verified: true, ...accounts.get(sub) }),
    }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined as unknown as string,
        useGrantedResource: () => false,
        getResourceServerInfo: (_ctx, resource) => {
          if (resource !== audience) throw new errors.InvalidTarget()
          return {
            scope: scopes.join(' '),
            audience,
            accessTokenTTL: 3600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          }
        },
      },
    },
    // First-party test client: consent is granted without asking.
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const session = ctx.oidc.session!
      const existing = ctx.oidc.result?.consent?.grantId ?? session.grantIdFor(ctx.oidc.client!.clientId)
      if (existing) return ctx.oidc.provider.Grant.find(existing)
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: session.accountId! })
      grant.addOIDCScope('openid profile email offline_access')
      grant.addOIDCClaims(['sub', 'name', 'groups', 'email', 'email_verified'])
      // The resource's scopes too, for a client that asks for a token for it (`resource=`).
      grant.addResourceScope(audience, scopes.join(' '))
      await grant.save()
      return grant
    },
  })
  let provider = new Provider(issuer, configure())
  let callback = provider.callback()

  // The interaction endpoint signs the account in at once: `?sub=` names it, else `loginAs`.
  const interact = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', issuer)
    const details = await provider.interactionDetails(req, res)
    const accountId = url.searchParams.get('sub') ?? loginSubject
    let result: Record<string, unknown> = details.prompt.name === 'login' ? { login: { accountId } } : {}
    // A consent prompt (a native client always gets one): grant what it asks for, at once.
    if (details.prompt.name === 'consent') {
      const grant = details.grantId
        ? (await provider.Grant.find(details.grantId))!
        : new provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id as string })
      const missing = details.prompt.details as {
        missingOIDCScope?: string[]
        missingOIDCClaims?: string[]
        missingResourceScopes?: Record<string, string[]>
      }
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '))
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims)
      for (const [resource, granted] of Object.entries(missing.missingResourceScopes ?? {})) {
        grant.addResourceScope(resource, granted.join(' '))
      }
      result = { consent: { grantId: await grant.save() } }
    }
    await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true })
  }
  const server = createServer((req, res) => {
    if ((req.url ?? '').startsWith('/interaction/')) {
      interact(req, res).catch((err) => {
        res.statusCode = 400
        res.end(`interaction failed: ${(err as Error).message}`)
      })
      return
    }
    callback(req, res)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })

  const basic = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`
  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  return {
    issuer,
    jwksUri: `${issuer}/jwks`,
    clientId,
    clientSecret,
    audience,
    loginAs(subject, claims) {
      loginSubject = subject
      if (claims) accounts.set(subject, claims)
    },
    async completeLogin(authorizationUrl, subject) {
      const jar = new Map<string, string>()
      let next = authorizationUrl
      for (let hop = 0; hop < 12; hop++) {
        const url = new URL(next)
        if (url.origin !== issuer) return next
        if (url.pathname.startsWith('/interaction/') && subject) url.searchParams.set('sub', subject)
        const res = await fetch(url, {
          redirect: 'manual',
          headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
        })
        for (const line of res.headers.getSetCookie()) {
          const [pair] = line.split(';')
          const eq = pair!.indexOf('=')
          jar.set(pair!.slice(0, eq).trim(), pair!.slice(eq + 1).trim())
        }
        const location = res.headers.get('location')
        await res.arrayBuffer()
        if (!location) throw new Error(`OpenID provider answered ${res.status} without a redirect at ${url.pathname}`)
        next = new URL(location, url).toString()
      }
      throw new Error('too many redirects at the OpenID provider')
    },
    async clientCredentialsToken(scope = scopes.join(' ')) {
      const res = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource: audience }),
      })
      const body = (await res.json()) as { access_token?: string; error?: string; error_description?: string }
      if (!res.ok || !body.access_token)
        throw new Error(`token endpoint: ${body.error} ${body.error_description ?? ''}`)
      return body.access_token
    },
    async rotateKeys({ retire = false } = {}) {
      keys = [await newSigningKey(), ...(retire ? [] : keys)]
      // oidc-provider reads its key set at construction: serve from a new instance.
      provider = new Provider(issuer, configure())
      callback = provider.callback()
      return keys[0]!.jwk.kid
    },
    async mintAccessToken(o) {
      const { jwk, signingKey } = keys[0]!
      const now = Math.floor(Date.now() / 1000)
      return new SignJWT({ scope: o.scope ?? scopes.join(' '), client_id: clientId, ...o.claims })
        .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: jwk.kid })
        .setIssuer(issuer)
        .setSubject(o.sub)
        .setAudience(o.audience ?? audience)
        .setIssuedAt(now)
        .setExpirationTime(now + (o.expiresIn ?? 3600))
        .setJti(randomUUID())
        .sign(signingKey)
    },
    stop,
    [Symbol.asyncDispose]: stop,
  }
}
