/**
 * Test harness: a real notify server on a loopback port over a fresh SQLite file or a
 * fresh PostgreSQL database (one PostgreSQL server per test file), and a small client.
 */
import { join } from 'node:path'
import { after } from 'node:test'
import { createLogger, type HttpApp, type Logger, loadConfig } from '@gatehouse/kit'
import { freePort, type Postgres, startPostgres, tempDir } from '@gatehouse/testkit'
import { type Config, finishConfig, schema } from '../src/config.ts'
import { openNotifyDatabase } from '../src/db/open.ts'
import { buildServer } from '../src/server.ts'

export const ADMIN = 'admin'
export const ADMIN_PASSWORD = 'admin-password-123'
export const DEV_TOKEN = 'dev-token-0123456789abcdef'

export interface Backend {
  name: 'sqlite' | 'postgres'
  url(): Promise<string>
}

let pg: Promise<Postgres> | undefined
const dir = tempDir('notify-test-')
let files = 0
after(async () => {
  if (pg) await (await pg).stop()
})

/** Both databases; PostgreSQL starts on first use and stops after the file's tests. */
export const backends: Backend[] = [
  { name: 'sqlite', url: async () => `sqlite:${join(dir.path, `t${++files}.db`)}` },
  {
    name: 'postgres',
    url: async () => {
      pg ??= startPostgres()
      return (await pg).createDatabase()
    },
  },
]

export interface Notify {
  base: string
  app: HttpApp
  config: Config
  database: Awaited<ReturnType<typeof openNotifyDatabase>>
  client: Client
  close(): Promise<void>
}

export interface StartOptions {
  auth?: boolean
  env?: Record<string, string>
  /** SQLite search indexer pause (a long one keeps new rows out of the index). */
  searchIndexIntervalMs?: number
  /** Realtime safety-net poll (ms); a long one proves delivery by PostgreSQL LISTEN. */
  streamPollMs?: number
  /** Listen on this port (default: a free one), e.g. when a provider must know the callback first. */
  port?: number
  /** Web Push: CA certificates trusted for push endpoints (the push service double's). */
  pushCa?: string | Buffer
  /** Between housekeeping runs (retention); default an hour. */
  housekeepingIntervalMs?: number
  /** Instead of the silent one (NOTIFY_TEST_LOG), e.g. to read what the server logged. */
  logger?: Logger
}

export async function startNotify(backend: Backend, options: StartOptions = {}): Promise<Notify> {
  const port = options.port ?? (await freePort())
  const env: Record<string, string> = {
    NOTIFY_LISTEN: `127.0.0.1:${port}`,
    NOTIFY_DATABASE_URL: await backend.url(),
    NOTIFY_BCRYPT_COST: '4',
    NOTIFY_HOOK_TOKEN: DEV_TOKEN,
    NOTIFY_LOG_LEVEL: process.env.NOTIFY_TEST_LOG ?? 'silent',
    ...(options.auth === false
      ? {}
      : {
          NOTIFY_READER_USERNAME: ADMIN,
          NOTIFY_READER_PASSWORD: ADMIN_PASSWORD,
          NOTIFY_PUBLIC_URL: `http://127.0.0.1:${port}`,
        }),
    ...options.env,
  }
  const config = finishConfig(loadConfig(schema, { env }).config)
  const database = await openNotifyDatabase(config.database)
  const app = await buildServer(config, {
    database,
    logger: options.logger ?? createLogger({ name: 'notify', level: config.logLevel }),
    ...(options.searchIndexIntervalMs !== undefined ? { searchIndexIntervalMs: options.searchIndexIntervalMs } : {}),
    ...(options.streamPollMs !== undefined ? { streamPollMs: options.streamPollMs } : {}),
    ...(options.pushCa !== undefined ? { pushCa: options.pushCa } : {}),
    ...(options.housekeepingIntervalMs !== undefined ? { housekeepingIntervalMs: options.housekeepingIntervalMs } : {}),
  })
  await app.listen({ host: '127.0.0.1', port })
  const base = `http://127.0.0.1:${port}`
  const n: Notify = {
    base,
    app,
    config,
    database,
    client: new Client(base),
    async close() {
      await app.close()
      await database.close()
    },
  }
  return n
}

// biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field in the tests
export type Json = any

export interface Res<T = Json> {
  status: number
  body: T
  text: string
  headers: Headers
}

export interface Req {
  body?: unknown
  raw?: string
  type?: string
  cookie?: string
  token?: string
  origin?: string | null
  headers?: Record<string, string>
}

export class Client {
  readonly base: string
  constructor(base: string) {
    this.base = base
  }

  async req<T = Json>(method: string, path: string, r: Req = {}): Promise<Res<T>> {
    const headers: Record<string, string> = { ...r.headers }
    let body: string | undefined
    if (r.raw !== undefined) {
      body = r.raw
      if (r.type) headers['content-type'] = r.type
    } else if (r.body !== undefined) {
      body = JSON.stringify(r.body)
      headers['content-type'] = r.type ?? 'application/json'
    }
    if (r.cookie) {
      headers.cookie = r.cookie
      // Browsers send Origin on every mutation; tests do the same unless told otherwise.
      if (r.origin !== null && method !== 'GET') headers.origin = r.origin ?? this.base
    } else if (r.origin) headers.origin = r.origin
    if (r.token) headers.authorization = `Bearer ${r.token}`
    const res = await fetch(this.base + path, { method, headers, ...(body !== undefined ? { body } : {}) })
    const text = await res.text()
    let parsed: unknown = text
    if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') parsed = JSON.parse(text)
    return { status: res.status, body: parsed as T, text, headers: res.headers }
  }

  get<T = Json>(path: string, r?: Req) {
    return this.req<T>('GET', path, r)
  }
  post<T = Json>(path: string, r?: Req) {
    return this.req<T>('POST', path, r)
  }
  put<T = Json>(path: string, r?: Req) {
    return this.req<T>('PUT', path, r)
  }
  delete<T = Json>(path: string, r?: Req) {
    return this.req<T>('DELETE', path, r)
  }

  /** Sign in and return the Cookie header value. */
  async login(username: string, password: string): Promise<string> {
    const res = await this.post('/api/v1/auth/login', { body: { username, password } })
    if (res.status !== 200) throw new Error(`login ${username} failed: ${res.status} ${res.text}`)
    const cookie = res.headers.get('set-cookie') ?? ''
    return cookie.split(';')[0]!
  }
}

/** Create a reader (as admin) and return their cookie. */
export async function reader(n: Notify, adminCookie: string, username: string, admin = false): Promise<string> {
  const password = `${username}-password-123`
  const res = await n.client.post('/api/v1/users', { cookie: adminCookie, body: { username, password, admin } })
  if (res.status !== 201) throw new Error(`create ${username}: ${res.status} ${res.text}`)
  return n.client.login(username, password)
}

export async function channel(
  n: Notify,
  adminCookie: string,
  name: string,
  visibility: 'public' | 'private' = 'public',
): Promise<{ token: string; webhookId: string }> {
  const res = await n.client.post('/api/v1/channels', { cookie: adminCookie, body: { name, visibility } })
  if (res.status !== 201) throw new Error(`create channel ${name}: ${res.status} ${res.text}`)
  return { token: res.body.publishing.token, webhookId: res.body.publishing.webhook_id }
}

export async function member(n: Notify, adminCookie: string, ch: string, username: string, role: string) {
  const res = await n.client.put(`/api/v1/channels/${ch}/members/${username}`, { cookie: adminCookie, body: { role } })
  if (res.status !== 201 && res.status !== 200) throw new Error(`member: ${res.status} ${res.text}`)
}

/** Publish a generic message with a token; returns the new id. */
export async function publish(n: Notify, token: string, text: string, source?: string): Promise<number> {
  const res = await n.client.post('/api/v1/messages', { token, body: source ? { text, source } : { text } })
  if (res.status !== 201) throw new Error(`publish: ${res.status} ${res.text}`)
  return res.body.notification.id
}

export async function count(n: Notify): Promise<number> {
  const row = await n.database.db
    .selectFrom('notifications')
    .select((eb) => eb.fn.countAll().as('c'))
    .executeTakeFirstOrThrow()
  return Number(row.c)
}
