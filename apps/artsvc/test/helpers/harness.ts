/**
 * Start a real artsvc on a loopback port: management origin http://127.0.0.1:P, content
 * origin http://localhost:P (same listener, told apart by Host), with a fresh SQLite file
 * or PostgreSQL database, filesystem or S3 storage, and the testkit OpenID provider for
 * bearer tokens.
 */
import { createLogger } from '@gatehouse/kit'
import {
  freePort,
  type OidcProvider,
  type Postgres,
  startOidcProvider,
  startPostgres,
  tempDir,
} from '@gatehouse/testkit'
import { type ArtsvcConfig, loadArtsvcConfig } from '../../src/config.ts'
import { type Artsvc, buildServer, type ServerDeps } from '../../src/server.ts'

export const AUDIENCE = 'https://artsvc.test'
export const SCOPE = 'artsvc:mcp'

export interface Harness {
  svc: Artsvc
  config: ArtsvcConfig
  port: number
  /** Management origin. */
  base: string
  /** Content origin. */
  content: string
  root: string
  close(): Promise<void>
}

/** A clock tests can move forward (server-side expiry decisions use it). */
export class TestClock {
  offset = 0
  #frozen: number | undefined
  now = () => this.#frozen ?? Date.now() + this.offset
  advance(ms: number) {
    if (this.#frozen === undefined) this.offset += ms
    else this.#frozen += ms
  }
  /**
   * Stop time until `thaw()`: an assertion that holds only within a TTL (the content origin's
   * one-second liveness) must not depend on how fast a loaded machine runs the test.
   */
  freeze() {
    this.#frozen = this.now()
  }
  thaw() {
    if (this.#frozen === undefined) return
    this.offset = this.#frozen - Date.now()
    this.#frozen = undefined
  }
}

export interface HarnessOptions {
  databaseUrl?: string
  clock?: TestClock
  op?: OidcProvider
  port?: number
  env?: Record<string, string>
  deps?: ServerDeps
}

export function baseEnv(root: string, port: number, op: OidcProvider | undefined): Record<string, string> {
  return {
    ARTSVC_PUBLIC_URL: `http://127.0.0.1:${port}`,
    ARTSVC_CONTENT_URL: `http://localhost:${port}`,
    ARTSVC_COOKIE_SECRET: 'test-cookie-secret-0123456789abcdef0123456789',
    ARTSVC_LISTEN: `127.0.0.1:${port}`,
    ARTSVC_STORAGE_ROOT: root,
    ARTSVC_LOG_LEVEL: 'silent',
    ARTSVC_ADMIN_SUBJECTS: 'root-admin',
    ARTSVC_ADMIN_GROUPS: 'artsvc-admins',
    ...(op
      ? {
          ARTSVC_OIDC_ISSUER: op.issuer,
          ARTSVC_OIDC_CLIENT_ID: op.clientId,
          ARTSVC_OIDC_CLIENT_SECRET: op.clientSecret,
          ARTSVC_OAUTH_AUDIENCE: AUDIENCE,
        }
      : {}),
  }
}

export async function startArtsvc(options: HarnessOptions = {}): Promise<Harness> {
  const dir = tempDir('artsvc-test-')
  const port = options.port ?? (await freePort())
  const env = { ...baseEnv(dir.path, port, options.op), ...options.env }
  if (options.databaseUrl) env.ARTSVC_DATABASE_URL = options.databaseUrl
  const config = loadArtsvcConfig({ env })
  const svc = await buildServer(config, {
    logger: createLogger({ name: 'artsvc', level: 'silent' }),
    ...(options.clock ? { now: options.clock.now } : {}),
    ...options.deps,
  })
  await svc.app.listen({ port, host: '127.0.0.1' })
  return {
    svc,
    config,
    port,
    base: `http://127.0.0.1:${port}`,
    content: `http://localhost:${port}`,
    root: dir.path,
    async close() {
      await svc.close()
      dir.remove()
    },
  }
}

export interface Backends {
  op: OidcProvider
  pg: Postgres
  /** Database URLs to loop suites over: a fresh SQLite file (default) and a fresh PostgreSQL database. */
  databases(): Promise<{ name: string; url: string | undefined }[]>
  stop(): Promise<void>
}

export async function startBackends(redirectUris: string[] = ['http://127.0.0.1:9/unused']): Promise<Backends> {
  const [op, pg] = await Promise.all([
    startOidcProvider({ redirectUris, audience: AUDIENCE, scopes: [SCOPE] }),
    startPostgres(),
  ])
  return {
    op,
    pg,
    async databases() {
      return [
        { name: 'sqlite', url: undefined },
        { name: 'postgres', url: await pg.createDatabase() },
      ]
    },
    async stop() {
      await Promise.all([op.stop(), pg.stop()])
    },
  }
}

/** Bearer headers for a user (a token signed by the provider's key, as the provider would issue). */
export async function bearer(
  op: OidcProvider,
  sub: string,
  claims?: Record<string, unknown>,
): Promise<Record<string, string>> {
  return {
    authorization: `Bearer ${await op.mintAccessToken({ sub, scope: SCOPE, audience: AUDIENCE, ...(claims ? { claims } : {}) })}`,
  }
}

export interface Published {
  artifact: string
  version: number
  url: string
}

/** Run the three-step upload flow; returns the commit response and status. */
export async function publishZip(
  h: Harness,
  auth: Record<string, string>,
  zip: Buffer,
  options: { title?: string; entrypoint?: string; artifact?: string } = {},
): Promise<{ status: number; body: Record<string, unknown>; commit?: () => Promise<Response> }> {
  const created = await fetch(`${h.base}/api/v1/artifacts/uploads`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({
      title: options.title ?? 'Sample',
      entrypoint: options.entrypoint ?? 'index.html',
      ...(options.artifact ? { artifact: options.artifact } : {}),
    }),
  })
  const session = (await created.json()) as Record<string, string>
  if (created.status !== 201) return { status: created.status, body: session }
  const put = await fetch(session.upload_url!, {
    method: 'PUT',
    headers: { 'x-artsvc-upload-token': session.upload_token!, 'content-type': 'application/zip' },
    body: new Uint8Array(zip),
  })
  if (put.status !== 200) return { status: put.status, body: (await put.json()) as Record<string, unknown> }
  await put.arrayBuffer()
  // The commit, which a client may send again (after a 503).
  const commit = () =>
    fetch(`${h.base}/api/v1/uploads/${session.id}/commit`, {
      method: 'POST',
      headers: { ...auth, 'x-artsvc-upload-token': session.upload_token! },
    })
  const committed = await commit()
  return { status: committed.status, body: (await committed.json()) as Record<string, unknown>, commit }
}

export async function mustPublish(
  h: Harness,
  auth: Record<string, string>,
  zip: Buffer,
  options: { title?: string; entrypoint?: string; artifact?: string } = {},
): Promise<Published> {
  const r = await publishZip(h, auth, zip, options)
  if (r.status !== 201) throw new Error(`publish failed: ${r.status} ${JSON.stringify(r.body)}`)
  const artifact = r.body.artifact as { id: string; url: string }
  return { artifact: artifact.id, version: (r.body.version as { number: number }).number, url: artifact.url }
}

/** The content origin's URL of an artifact's entry page, as the viewer page's iframe loads it. */
export const frameOf = (html: string) => /<iframe[^>]*src="([^"]+)"/.exec(html)![1]!.replaceAll('&amp;', '&')
