/**
 * `artsvc login --browser`: sign in at the server's OpenID provider the way native apps do
 * (RFC 8252): authorization code with PKCE, the browser sent back to a one-shot listener on
 * 127.0.0.1 (any port), a public client (no secret on the user's machine). The provider comes
 * from the server's protected-resource metadata (RFC 9728); the token asks for the server's
 * resource (RFC 8707) and `offline_access`, so a provider that issues a refresh token lets the
 * login renew itself (credentials.ts).
 */
import { createHash, randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import { CliError } from '@gatehouse/kit/cli/program.ts'
import { loginFromTokens, tokenRequest } from './credentials.ts'
import { login, type Output } from './manage.ts'

export interface BrowserLoginOptions {
  /** Management URL. */
  url: string
  /** The public client registered at the provider for this CLI (redirect http://127.0.0.1/callback). */
  clientId: string
  /** The access tokens' audience the server requires (default: the metadata's `resource`). */
  audience?: string
  env?: NodeJS.ProcessEnv
  /** Show the sign-in URL to the person (stderr); tests follow it themselves. */
  show(url: string): void
  /** How long to wait for the browser (default 5 minutes). */
  timeoutMs?: number
}

const METADATA_PATH = '/.well-known/oauth-protected-resource/mcp'

async function getJson(url: string, what: string): Promise<Record<string, unknown>> {
  let res: Response
  try {
    res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(15_000) })
  } catch (err) {
    throw new CliError(`cannot read ${what} at ${url}: ${(err as Error).message}`)
  }
  if (!res.ok) throw new CliError(`cannot read ${what} at ${url}: HTTP ${res.status}`)
  return (await res.json().catch(() => {
    throw new CliError(`${what} at ${url} is not JSON`)
  })) as Record<string, unknown>
}

/** Where to sign in: the provider's endpoints, the audience and the scope, from the server's metadata. */
async function discover(o: BrowserLoginOptions) {
  const base = new URL(o.url)
  const metadata = await getJson(new URL(METADATA_PATH, base).href, "the server's OAuth metadata")
  const issuer = (metadata.authorization_servers as string[] | undefined)?.[0]
  if (!issuer) throw new CliError(`${base.origin} names no OpenID provider (its ARTSVC_OIDC_ISSUER is unset)`)
  const provider = await getJson(
    `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`,
    "the provider's configuration",
  )
  const authorize = provider.authorization_endpoint
  const token = provider.token_endpoint
  if (typeof authorize !== 'string' || typeof token !== 'string') {
    throw new CliError(`the provider ${issuer} publishes no authorization or token endpoint`)
  }
  const scope = (metadata.scopes_supported as string[] | undefined)?.[0] ?? 'artsvc:mcp'
  const audience = o.audience ?? (metadata.resource as string | undefined)
  if (!audience) throw new CliError('give --audience (the ARTSVC_OAUTH_AUDIENCE of the server)')
  return { authorize, token, scope, audience }
}

const base64url = (b: Buffer) => b.toString('base64url')

/** Wait for one `GET /callback?code=&state=` on a loopback listener; answers the browser in plain text. */
function awaitCallback(server: Server, state: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new CliError(`no sign-in within ${Math.round(timeoutMs / 1000)} s: run artsvc login again`)),
      timeoutMs,
    )
    server.on('request', (req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1')
      if (url.pathname !== '/callback') {
        res.writeHead(404).end()
        return
      }
      const answer = (status: number, text: string) =>
        res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }).end(text)
      // Another page's request to this port is not the provider's answer: ignore it.
      if (url.searchParams.get('state') !== state) {
        answer(400, 'This sign-in link is not the one artsvc is waiting for.')
        return
      }
      clearTimeout(timer)
      const error = url.searchParams.get('error')
      const code = url.searchParams.get('code')
      if (error || !code) {
        answer(400, 'Sign-in failed; see the terminal.')
        const why = url.searchParams.get('error_description') ?? error ?? 'no authorization code'
        reject(new CliError(`the provider refused the sign-in: ${why}`))
        return
      }
      answer(200, 'Signed in to artsvc. You can close this tab.')
      resolve(code)
    })
  })
}

export async function browserLogin(o: BrowserLoginOptions): Promise<Output> {
  const endpoints = await discover(o)
  const server = createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  try {
    const port = (server.address() as { port: number }).port
    const redirectUri = `http://127.0.0.1:${port}/callback`
    const verifier = base64url(randomBytes(32))
    const state = base64url(randomBytes(16))
    const authorization = new URL(endpoints.authorize)
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: o.clientId,
      redirect_uri: redirectUri,
      scope: `openid offline_access ${endpoints.scope}`,
      // OpenID Connect grants offline_access (a refresh token) only with an explicit consent prompt.
      prompt: 'consent',
      state,
      code_challenge: base64url(createHash('sha256').update(verifier).digest()),
      code_challenge_method: 'S256',
      resource: endpoints.audience,
    })) {
      authorization.searchParams.set(k, v)
    }
    const code = awaitCallback(server, state, o.timeoutMs ?? 300_000)
    o.show(authorization.href)
    const tokens = await tokenRequest(endpoints.token, {
      grant_type: 'authorization_code',
      code: await code,
      redirect_uri: redirectUri,
      client_id: o.clientId,
      code_verifier: verifier,
      resource: endpoints.audience,
    }).catch((err: Error) => {
      throw new CliError(`signing in failed: ${err.message}`)
    })
    const { token, ...rest } = loginFromTokens(tokens)
    return await login(
      { url: o.url, token, ...(o.env ? { env: o.env } : {}) },
      { ...rest, token_endpoint: endpoints.token, client_id: o.clientId, resource: endpoints.audience },
    )
  } finally {
    server.closeAllConnections()
    server.close()
  }
}
