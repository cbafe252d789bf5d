/**
 * A suite over real sockets on both databases: one PostgreSQL server and one OpenID
 * provider per test file, a fresh artsvc per database with a movable clock, bearer tokens
 * for every role (owner alice, editor bob, viewer carol, other dave, admin by subject,
 * admin by group) and one published artifact with the editor and viewer grants.
 */
import assert from 'node:assert/strict'
import { after, before, describe } from 'node:test'
import {
  type Backends,
  bearer,
  type Harness,
  mustPublish,
  type Published,
  startArtsvc,
  startBackends,
  TestClock,
} from './harness.ts'
import { sampleBundle } from './zip-builder.ts'

export type Who = 'anon' | 'owner' | 'editor' | 'viewer' | 'other' | 'admin' | 'groupAdmin'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
export type Loose = Record<string, any>

export async function json(res: Response): Promise<Loose> {
  const text = await res.text()
  if (!(res.headers.get('content-type') ?? '').includes('json')) return { text }
  return text ? (JSON.parse(text) as Loose) : {}
}

export interface ApiSuite {
  h: Harness
  clock: TestClock
  auth: Record<Who, Record<string, string>>
  /** Published by the owner; bob is editor, carol viewer. */
  art: Published
  backends: Backends
  call(
    who: Who,
    method: string,
    path: string,
    body?: unknown,
    extra?: Record<string, string>,
  ): Promise<{ status: number; body: Loose; headers: Headers }>
}

const SUBJECTS: Record<Exclude<Who, 'anon' | 'groupAdmin'>, string> = {
  owner: 'alice',
  editor: 'bob',
  viewer: 'carol',
  other: 'dave',
  admin: 'root-admin',
}

/** Define `body`'s tests once per database (SQLite, PostgreSQL). */
export function apiSuites(title: string, body: (s: ApiSuite) => void) {
  let backends: Backends
  before(async () => {
    backends = await startBackends()
  })
  after(() => backends?.stop())

  for (const dbName of ['sqlite', 'postgres'] as const) {
    describe(`${title} on ${dbName}`, () => {
      const s = { clock: new TestClock(), auth: {} } as ApiSuite
      s.call = async (who, method, path, payload, extra = {}) => {
        const headers: Record<string, string> = { ...s.auth[who], ...extra }
        if (payload !== undefined) headers['content-type'] = 'application/json'
        const res = await fetch(`${s.h.base}${path}`, {
          method,
          headers,
          body: payload === undefined ? undefined : JSON.stringify(payload),
          redirect: 'manual',
        })
        return { status: res.status, body: await json(res), headers: res.headers }
      }

      before(async () => {
        s.backends = backends
        const url = dbName === 'postgres' ? await backends.pg.createDatabase() : undefined
        s.h = await startArtsvc({ op: backends.op, clock: s.clock, ...(url ? { databaseUrl: url } : {}) })
        s.auth.anon = {}
        for (const [who, sub] of Object.entries(SUBJECTS)) s.auth[who as Who] = await bearer(backends.op, sub)
        s.auth.groupAdmin = await bearer(backends.op, 'erin', { groups: ['artsvc-admins'] })
        for (const who of ['owner', 'editor', 'viewer', 'other', 'admin', 'groupAdmin'] as const) {
          assert.equal((await s.call(who, 'GET', '/api/v1/me')).status, 200)
        }
        s.art = await mustPublish(s.h, s.auth.owner, sampleBundle(), { title: 'Matrix' })
        const grant = (subject: string, role: string) =>
          s.call('owner', 'PUT', `/api/v1/artifacts/${s.art.artifact}/grants`, { subject, role })
        assert.equal((await grant('bob', 'editor')).status, 200)
        assert.equal((await grant('carol', 'viewer')).status, 200)
      })
      after(() => s.h?.close())

      body(s)
    })
  }
}
