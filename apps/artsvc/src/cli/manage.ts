/**
 * The management commands of the artsvc CLI as plain functions over parsed options (the app
 * shell wires them as `artsvc login | list | open | share create|list|revoke`, each with
 * `--json`): each returns the lines a person reads and the value `--json` prints.
 *
 * `login` keeps one token per management origin (credentials.ts: owner-only file, refreshed when
 * the browser sign-in got a refresh token); ARTSVC_TOKEN still wins over it. The token is checked
 * against the server before it is saved.
 */
import { type Column, formatTable } from '@gatehouse/kit/cli/output.ts'
import { invokedAs } from '@gatehouse/kit/cli/program.ts'
import { request } from 'undici'
import { PublishError, readAnswer } from './answers.ts'
import { credentialsFile, type StoredLogin, saveLogin, usableToken } from './credentials.ts'

export { credentialsFile }

export interface Output {
  lines: string[]
  json: unknown
  /** The lines are a kit table, escaped cell by cell (and styled on a terminal): printed as they are. */
  escaped?: true
}

export interface Target {
  /** Management URL (its origin is the key of the stored token). */
  url: string
  /** An explicit token (ARTSVC_TOKEN); else the stored one is used. */
  token?: string
  env?: NodeJS.ProcessEnv
}

/** ARTSVC_TOKEN, else the stored login for the URL (refreshed when it is about to expire). */
async function tokenFor(t: Target): Promise<string> {
  if (t.token) return t.token
  const stored = await usableToken(t.url, t.env)
  if (!stored) throw new PublishError(`not logged in to ${new URL(t.url).origin}: run artsvc login or set ARTSVC_TOKEN`)
  return stored
}

async function api(t: Target, method: string, path: string, body?: unknown, given?: string) {
  const token = given ?? (await tokenFor(t))
  const url = new URL(path, t.url)
  let res: Awaited<ReturnType<typeof request>>
  try {
    res = await request(url, {
      method: method as 'GET',
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  } catch (err) {
    throw new PublishError(`cannot reach ${url.origin}: ${(err as Error).message}`)
  }
  return readAnswer(url, res)
}

/** Rows as the kit's table (the same layout, escaping and header style as every other list). */
function tableOutput<Row>(columns: Column<Row>[], rows: Row[]): Output {
  return { lines: formatTable(columns, rows).trimEnd().split('\n'), json: rows, escaped: true }
}

/** Check a token against the server, then keep it for the server's origin (owner-only file). */
export async function login(
  t: Target & { token: string },
  extra: Omit<StoredLogin, 'token' | 'saved_at'> = {},
): Promise<Output> {
  const origin = new URL(t.url).origin
  await api(t, 'GET', '/api/v1/artifacts', undefined, t.token)
  const file = saveLogin(t.url, { token: t.token, ...extra }, t.env)
  const refresh = extra.refresh_token ? ', refreshed when it expires' : ''
  return { lines: [`logged in to ${origin} (token kept in ${file}${refresh})`], json: { url: origin, file } }
}

interface ArtifactJson {
  id: string
  title: string
  latest_version: number
  updated_at: string
  url: string
  role?: string
}

export async function list(t: Target): Promise<Output> {
  const { artifacts } = (await api(t, 'GET', '/api/v1/artifacts')) as { artifacts: ArtifactJson[] }
  if (artifacts.length === 0)
    return {
      lines: [`no artifacts you can see yet: ${invokedAs('artsvc')} publish --title TITLE --zip DIR publishes one`],
      json: artifacts,
    }
  return tableOutput<ArtifactJson>(
    [
      { header: 'ID', value: (a) => a.id },
      { header: 'TITLE', value: (a) => a.title },
      { header: 'VERSION', value: (a) => a.latest_version },
      { header: 'UPDATED', value: (a) => a.updated_at },
      { header: 'ROLE', value: (a) => a.role },
      { header: 'URL', value: (a) => a.url },
    ],
    artifacts,
  )
}

/** The artifact's URL (the shell opens it in a browser when there is one). */
export async function open(t: Target & { artifact: string }): Promise<Output> {
  const a = (await api(t, 'GET', `/api/v1/artifacts/${encodeURIComponent(t.artifact)}`)) as unknown as ArtifactJson
  return { lines: [a.url], json: { id: a.id, url: a.url } }
}

interface ShareJson {
  id: string
  url?: string
  status: string
  label?: string | null
  views?: number
  max_views?: number | null
  expires_at?: string | null
}

export async function shareCreate(
  t: Target & { artifact: string; label?: string; expiresAt?: string; maxViews?: number },
): Promise<Output> {
  const share = (await api(t, 'POST', `/api/v1/artifacts/${encodeURIComponent(t.artifact)}/shares`, {
    ...(t.label ? { label: t.label } : {}),
    ...(t.expiresAt ? { expires_at: t.expiresAt } : {}),
    ...(t.maxViews ? { max_views: t.maxViews } : {}),
  })) as unknown as ShareJson
  return { lines: [share.url ?? share.id], json: share }
}

export async function shareList(t: Target & { artifact: string }): Promise<Output> {
  const { shares } = (await api(t, 'GET', `/api/v1/artifacts/${encodeURIComponent(t.artifact)}/shares`)) as {
    shares: ShareJson[]
  }
  if (shares.length === 0)
    return { lines: [`no share links yet: ${invokedAs('artsvc')} share create ${t.artifact} makes one`], json: shares }
  return tableOutput<ShareJson>(
    [
      { header: 'ID', value: (s) => s.id },
      { header: 'STATUS', value: (s) => s.status },
      // The limit beside the count, as the web page shows it: "1/20".
      { header: 'VIEWS', value: (s) => `${s.views ?? 0}${typeof s.max_views === 'number' ? `/${s.max_views}` : ''}` },
      { header: 'EXPIRES', value: (s) => s.expires_at },
      { header: 'LABEL', value: (s) => s.label },
    ],
    shares,
  )
}

export async function shareRevoke(t: Target & { artifact: string; share: string }): Promise<Output> {
  await api(t, 'DELETE', `/api/v1/artifacts/${encodeURIComponent(t.artifact)}/shares/${encodeURIComponent(t.share)}`)
  return { lines: [`revoked ${t.share}`], json: { id: t.share, status: 'revoked' } }
}
