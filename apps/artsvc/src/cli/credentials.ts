/**
 * The tokens `artsvc login` keeps, one entry per management origin, in
 * `$XDG_CONFIG_HOME/gatehouse/artsvc.json` (default `~/.config`; folder 0700, file 0600).
 *
 * An entry from the browser sign-in also keeps the provider's refresh token, its token endpoint,
 * the client id and the resource: when the access token is within a minute of expiring, the
 * next command trades the refresh token for a new one (RFC 6749 section 6, with the resource
 * indicator of RFC 8707) and saves it, so a login lasts as long as the provider allows.
 */
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { CliError } from '@gatehouse/kit/cli/program.ts'
import { fileErrorWords } from './file-errors.ts'

export interface StoredLogin {
  token: string
  saved_at: string
  /** Access-token expiry (RFC 3339), when the provider said. */
  expires_at?: string
  refresh_token?: string
  token_endpoint?: string
  client_id?: string
  resource?: string
}

type Stored = Record<string, StoredLogin>

/** Refresh this long before the access token expires, so a command never starts with a dying token. */
const REFRESH_MARGIN_MS = 60_000

export function credentialsFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config')
  return join(base, 'gatehouse', 'artsvc.json')
}

/**
 * The stored logins; none when the file does not exist. A file that cannot be read or parsed is
 * said, naming it, rather than taken as empty: `login` would then have replaced every other
 * server's login (and refresh token) with its one entry.
 */
function readStored(file: string): Stored {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {}
    throw new CliError(`cannot read the stored logins in ${file}: ${fileErrorWords(err)}`)
  }
  try {
    const stored = JSON.parse(text) as unknown
    if (typeof stored === 'object' && stored !== null && !Array.isArray(stored)) return stored as Stored
  } catch {
    // said below
  }
  throw new CliError(`the stored logins in ${file} are not a JSON object: remove the file and run artsvc login again`)
}

/** Keep `login` for the origin of `url`; returns the file. */
export function saveLogin(url: string, login: Omit<StoredLogin, 'saved_at'>, env: NodeJS.ProcessEnv = process.env) {
  const file = credentialsFile(env)
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  const stored = readStored(file)
  stored[new URL(url).origin] = { ...login, saved_at: new Date().toISOString() }
  // A new owner-only file renamed over the old one: a command reading it meanwhile (another
  // artsvc refreshing its token) sees the old logins or the new ones, never a half-written file.
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  try {
    writeFileSync(temp, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600, flag: 'wx' })
    renameSync(temp, file)
  } catch (err) {
    rmSync(temp, { force: true })
    throw new CliError(`cannot save the login in ${file}: ${fileErrorWords(err)}`)
  }
  return file
}

/** The entry `artsvc login` kept for the origin of `url`, as stored (no refresh). */
export function storedLogin(url: string, env: NodeJS.ProcessEnv = process.env): StoredLogin | undefined {
  return readStored(credentialsFile(env))[new URL(url).origin]
}

/**
 * The stored access token for the origin of `url`, refreshed first when it is about to expire
 * and a refresh token was kept. Undefined when there is no login for that origin.
 */
export async function usableToken(
  url: string,
  env: NodeJS.ProcessEnv = process.env,
  now = Date.now(),
): Promise<string | undefined> {
  const login = storedLogin(url, env)
  if (!login) return undefined
  const expires = login.expires_at ? Date.parse(login.expires_at) : Number.POSITIVE_INFINITY
  if (expires - REFRESH_MARGIN_MS > now) return login.token
  const origin = new URL(url).origin
  if (!login.refresh_token || !login.token_endpoint || !login.client_id) {
    throw new CliError(`the login for ${origin} has expired: run artsvc login again`)
  }
  const tokens = await tokenRequest(login.token_endpoint, {
    grant_type: 'refresh_token',
    refresh_token: login.refresh_token,
    client_id: login.client_id,
    ...(login.resource ? { resource: login.resource } : {}),
  }).catch((err: Error) => {
    throw new CliError(
      `the login for ${origin} expired and could not be refreshed (${err.message}): run artsvc login again`,
    )
  })
  saveLogin(
    url,
    {
      ...login,
      ...loginFromTokens(tokens, now),
      // A provider that does not rotate refresh tokens answers without one: keep the old one.
      refresh_token: tokens.refresh_token ?? login.refresh_token,
    },
    env,
  )
  return tokens.access_token
}

export interface TokenResponse {
  access_token: string
  refresh_token?: string
  expires_in?: number
}

/** The stored fields a token response gives. */
export function loginFromTokens(
  tokens: TokenResponse,
  now = Date.now(),
): Pick<StoredLogin, 'token' | 'expires_at'> & { refresh_token?: string } {
  return {
    token: tokens.access_token,
    ...(typeof tokens.expires_in === 'number'
      ? { expires_at: new Date(now + tokens.expires_in * 1000).toISOString() }
      : {}),
    ...(tokens.refresh_token ? { refresh_token: tokens.refresh_token } : {}),
  }
}

/** POST a form to a token endpoint (a public client: no secret); throws with the provider's error. */
export async function tokenRequest(endpoint: string, form: Record<string, string>): Promise<TokenResponse> {
  let res: Response
  try {
    res = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams(form),
      redirect: 'error',
      signal: AbortSignal.timeout(30_000),
    })
  } catch (err) {
    throw new Error(`cannot reach ${new URL(endpoint).origin}: ${(err as Error).message}`)
  }
  const body = (await res.json().catch(() => ({}))) as Partial<TokenResponse> & {
    error?: string
    error_description?: string
  }
  if (!res.ok || typeof body.access_token !== 'string') {
    throw new Error(
      `token endpoint answered ${res.status}${body.error ? ` ${body.error}` : ''}${body.error_description ? `: ${body.error_description}` : ''}`,
    )
  }
  return body as TokenResponse
}
