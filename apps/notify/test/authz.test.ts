/**
 * Authorization for every reader-facing endpoint, for every role, on a public and a
 * private channel: anonymous, a signed-in outsider, viewer, operator, channel_admin and
 * installation administrator.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  ADMIN,
  ADMIN_PASSWORD,
  backends,
  channel,
  DEV_TOKEN,
  member,
  type Notify,
  publish,
  type Req,
  reader,
  startNotify,
} from './helpers.ts'

type Who = 'anonymous' | 'outsider' | 'viewer' | 'operator' | 'channel_admin' | 'admin'
const WHO: Who[] = ['anonymous', 'outsider', 'viewer', 'operator', 'channel_admin', 'admin']

interface Case {
  name: string
  /** Prepare and describe the request for a channel. */
  request: (ch: 'pub' | 'priv') => Promise<{ method: string; path: string; r?: Req }>
  /** Expected status per principal on the public and on the private channel. */
  expect: (who: Who, ch: 'pub' | 'priv') => number
}

const adminOnly = (ok: number) => (who: Who) => (who === 'anonymous' ? 401 : who === 'admin' ? ok : 403)
const signedIn = (ok: number) => (who: Who) => (who === 'anonymous' ? 401 : ok)
const readers = (ok: number) => (who: Who, ch: 'pub' | 'priv') =>
  who === 'anonymous' ? 401 : ch === 'priv' && who === 'outsider' ? 404 : ok
const operators = (ok: number) => (who: Who, ch: 'pub' | 'priv') => {
  const r = readers(ok)(who, ch)
  if (r !== ok) return r
  return who === 'outsider' || who === 'viewer' ? 403 : ok
}
const channelAdmins = (ok: number) => (who: Who, ch: 'pub' | 'priv') => {
  const r = readers(ok)(who, ch)
  if (r !== ok) return r
  return who === 'admin' || who === 'channel_admin' ? ok : 403
}

for (const backend of backends) {
  describe(`authorization matrix (${backend.name})`, () => {
    let n: Notify
    const cookies: Partial<Record<Who, string>> = {}
    const tokens: Record<string, string> = {}
    let counter = 0
    before(async () => {
      n = await startNotify(backend)
      cookies.admin = await n.client.login(ADMIN, ADMIN_PASSWORD)
      tokens.pub = (await channel(n, cookies.admin, 'pub')).token
      tokens.priv = (await channel(n, cookies.admin, 'priv', 'private')).token
      for (const who of ['outsider', 'viewer', 'operator', 'channel_admin'] as const) {
        const name = who.replace('_', '-')
        cookies[who] = await reader(n, cookies.admin, name)
        if (who !== 'outsider') {
          await member(n, cookies.admin, 'pub', name, who)
          await member(n, cookies.admin, 'priv', name, who)
        }
      }
      await reader(n, cookies.admin, 'target')
    })
    after(() => n.close())

    const fresh = (ch: 'pub' | 'priv') => publish(n, tokens[ch]!, `item ${++counter}`)
    const webhook = async () =>
      (await n.client.post('/api/v1/webhooks', { cookie: cookies.admin!, body: { channel: 'pub' } })).body.webhook.id

    const cases: Case[] = [
      {
        name: 'GET /api/v1/auth/me',
        request: async () => ({ method: 'GET', path: '/api/v1/auth/me' }),
        expect: signedIn(200),
      },
      {
        name: 'POST /api/v1/users',
        request: async () => ({
          method: 'POST',
          path: '/api/v1/users',
          r: { body: { username: `u${++counter}`, password: 'some-password-1' } },
        }),
        expect: adminOnly(201),
      },
      {
        name: 'GET /api/v1/users',
        request: async () => ({ method: 'GET', path: '/api/v1/users' }),
        expect: adminOnly(200),
      },
      {
        name: 'POST /api/v1/channels',
        request: async () => ({ method: 'POST', path: '/api/v1/channels', r: { body: { name: `c${++counter}` } } }),
        expect: adminOnly(201),
      },
      {
        name: 'GET /api/v1/channels',
        request: async () => ({ method: 'GET', path: '/api/v1/channels' }),
        expect: signedIn(200),
      },
      {
        name: 'GET /api/v1/channels/{id}',
        request: async (ch) => ({ method: 'GET', path: `/api/v1/channels/${ch}` }),
        expect: readers(200),
      },
      {
        name: 'GET /api/v1/channels/{id}/members',
        request: async (ch) => ({ method: 'GET', path: `/api/v1/channels/${ch}/members` }),
        expect: channelAdmins(200),
      },
      {
        name: 'PUT /api/v1/channels/{id}/members/{username}',
        request: async (ch) => {
          await n.client.delete(`/api/v1/channels/${ch}/members/target`, { cookie: cookies.admin! })
          return { method: 'PUT', path: `/api/v1/channels/${ch}/members/target`, r: { body: { role: 'viewer' } } }
        },
        expect: channelAdmins(201),
      },
      {
        name: 'DELETE /api/v1/channels/{id}/members/{username}',
        request: async (ch) => {
          await member(n, cookies.admin!, ch, 'target', 'viewer')
          return { method: 'DELETE', path: `/api/v1/channels/${ch}/members/target` }
        },
        expect: channelAdmins(204),
      },
      {
        name: 'POST /api/v1/webhooks',
        request: async (ch) => ({ method: 'POST', path: '/api/v1/webhooks', r: { body: { channel: ch } } }),
        expect: adminOnly(201),
      },
      {
        name: 'GET /api/v1/webhooks',
        request: async () => ({ method: 'GET', path: '/api/v1/webhooks' }),
        expect: adminOnly(200),
      },
      {
        name: 'POST /api/v1/webhooks/{id}/revoke',
        request: async () => ({ method: 'POST', path: `/api/v1/webhooks/${await webhook()}/revoke` }),
        expect: adminOnly(200),
      },
      {
        name: 'POST /api/v1/webhooks/{id}/new-url',
        request: async () => ({ method: 'POST', path: `/api/v1/webhooks/${await webhook()}/new-url` }),
        expect: adminOnly(201),
      },
      {
        name: 'POST /api/v1/admin/import/webhooks',
        request: async (ch) => ({
          method: 'POST',
          path: '/api/v1/admin/import/webhooks',
          r: { body: { dry_run: true, webhooks: [{ id: 'imported-hook-id-0001', channel: ch }] } },
        }),
        expect: adminOnly(200),
      },
      {
        name: 'GET /api/v1/notifications',
        request: async (ch) => ({ method: 'GET', path: `/api/v1/notifications?channel=${ch}` }),
        expect: readers(200),
      },
      {
        name: 'GET /api/v1/notifications/{id}',
        request: async (ch) => ({ method: 'GET', path: `/api/v1/notifications/${await fresh(ch)}` }),
        expect: readers(200),
      },
      {
        name: 'GET /api/v1/notifications/{id}/activity',
        request: async (ch) => ({ method: 'GET', path: `/api/v1/notifications/${await fresh(ch)}/activity` }),
        expect: readers(200),
      },
      ...(['read', 'archive', 'restore'] as const).map(
        (action): Case => ({
          name: `POST /api/v1/notifications/{id}/${action}`,
          request: async (ch) => ({ method: 'POST', path: `/api/v1/notifications/${await fresh(ch)}/${action}` }),
          expect: readers(200),
        }),
      ),
      ...(['acknowledge', 'resolve'] as const).map(
        (action): Case => ({
          name: `POST /api/v1/notifications/{id}/${action}`,
          request: async (ch) => ({ method: 'POST', path: `/api/v1/notifications/${await fresh(ch)}/${action}` }),
          expect: operators(200),
        }),
      ),
      {
        name: 'POST /api/v1/channels/{id}/read',
        request: async (ch) => ({ method: 'POST', path: `/api/v1/channels/${ch}/read` }),
        expect: readers(200),
      },
      {
        name: 'POST /api/v1/notifications/read-all',
        request: async () => ({ method: 'POST', path: '/api/v1/notifications/read-all' }),
        expect: signedIn(200),
      },
      // Publishing needs a hook token; a reader session grants nothing there.
      {
        name: 'POST /api/v1/messages (session, no token)',
        request: async () => ({ method: 'POST', path: '/api/v1/messages', r: { body: { text: 'x' } } }),
        expect: () => 401,
      },
      {
        name: 'POST /api/v1/notifications (session, no token)',
        request: async () => ({
          method: 'POST',
          path: '/api/v1/notifications',
          r: { body: { version: 1, title: 'x' } },
        }),
        expect: () => 401,
      },
    ]

    for (const c of cases) {
      test(c.name, async () => {
        const seen: string[] = []
        const wanted: string[] = []
        for (const ch of ['pub', 'priv'] as const) {
          for (const who of WHO) {
            const { method, path, r } = await c.request(ch)
            const cookie = cookies[who]
            const res = await n.client.req(method, path, { ...r, ...(cookie ? { cookie } : {}) })
            seen.push(`${ch}/${who}: ${res.status}`)
            wanted.push(`${ch}/${who}: ${c.expect(who, ch)}`)
            if (res.status >= 400) assert.equal(typeof res.body.error.code, 'string')
          }
        }
        assert.deepEqual(seen, wanted)
      })
    }

    test('POST /hooks/{token}: the path token is the only credential', async () => {
      assert.equal(
        (await n.client.post('/hooks/not-a-token', { cookie: cookies.admin!, body: { text: 'x' } })).status,
        401,
      )
      assert.equal((await n.client.post(`/hooks/${DEV_TOKEN}`, { body: { text: 'x' } })).status, 200)
    })
  })
}
