/**
 * The MCP endpoint reuses server instances between 2025-era requests (one per audience,
 * one request at a time; mcp/serve.ts). These tests drive many callers at once through the
 * SDK's own client, on SQLite and PostgreSQL, and check that nothing of one request
 * reaches another: each caller lists only what it may see, acts as itself (ownership and
 * the audit records name the caller), and administrators' tools stay invisible and
 * uncallable for everybody else however the instances were used before. The 2026-07-28
 * protocol (a fresh instance per request) is driven the same way.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Backends, bearer, type Harness, startArtsvc, startBackends } from './helpers/harness.ts'
import { connectMcp, type McpSession } from './helpers/mcp-client.ts'

const USERS = ['alice', 'bob', 'carol']
const ADMIN_TOOL = 'artsvc_admin_list'

let backends: Backends
before(async () => {
  backends = await startBackends()
})
after(() => backends?.stop())

for (const dbName of ['sqlite', 'postgres'] as const) {
  describe(`MCP instance reuse on ${dbName}`, () => {
    let h: Harness
    const sessions: McpSession[] = []
    const as = async (sub: string, options?: Parameters<typeof connectMcp>[2]) => {
      const s = await connectMcp(h.base, await bearer(backends.op, sub), options)
      sessions.push(s)
      return s
    }

    before(async () => {
      const url = dbName === 'postgres' ? await backends.pg.createDatabase() : undefined
      h = await startArtsvc({ op: backends.op, ...(url ? { databaseUrl: url } : {}) })
    })
    after(async () => {
      await Promise.all(sessions.map((s) => s.close().catch(() => {})))
      await h?.close()
    })

    test('concurrent callers each see and act as themselves; admin tools never reach others', async () => {
      const users = await Promise.all(USERS.map((u) => as(u)))
      const admin = await as('root-admin')
      const own = new Map<string, string>()
      for (const [i, s] of users.entries()) {
        const p = await s.call('artsvc_publish', { title: `${USERS[i]}'s page`, files: { 'index.html': USERS[i]! } })
        assert.ok(p.ok, JSON.stringify(p.error))
        own.set(USERS[i]!, p.out.artifact.id)
      }

      // Rounds of every caller at once: lists, tool lists, a refused write on someone
      // else's artifact, an allowed write on one's own, and the administrator's tools.
      for (let round = 0; round < 12; round++) {
        await Promise.all([
          ...users.map(async (s, i) => {
            const me = USERS[i]!
            const other = USERS[(i + 1) % USERS.length]!
            // Others' artifacts appear while they are visible to every signed-in account, never as one's own.
            const list = await s.call('artsvc_list')
            const rows = list.out.artifacts as { id: string; owner: string; role: string }[]
            assert.deepEqual(
              rows.filter((a) => a.role === 'owner').map((a) => a.id),
              [own.get(me)],
            )
            for (const a of rows) assert.equal(a.id, own.get(a.owner), JSON.stringify(a))
            assert.ok(!(await s.tools()).includes(ADMIN_TOOL))
            const denied = await s.call('artsvc_set_visibility', { artifact: own.get(other), visibility: 'private' })
            // Not found while private, refused while visible to every signed-in account.
            assert.ok(['artifact_not_found', 'access_denied'].includes(denied.error?.code ?? ''), denied.error?.code)
            const set = await s.call('artsvc_set_visibility', {
              artifact: own.get(me),
              visibility: round % 2 ? 'private' : 'authenticated',
            })
            assert.ok(set.ok, JSON.stringify(set.error))
            const hidden = await s.client
              .callTool({ name: ADMIN_TOOL, arguments: {} })
              .catch((err: Error) => ({ isError: true, err }))
            assert.equal(hidden.isError, true)
          }),
          (async () => {
            assert.ok((await admin.tools()).includes(ADMIN_TOOL))
            const all = await admin.call(ADMIN_TOOL)
            assert.equal(all.out.artifacts.length, USERS.length)
          })(),
        ])
      }

      // Every visibility change is recorded under the caller who made it, on their own artifact.
      const audit = (await (
        await fetch(`${h.base}/api/v1/admin/audit?limit=200`, { headers: await bearer(backends.op, 'root-admin') })
      ).json()) as { events: { action: string; target_id: string; actor: string }[] }
      const changes = audit.events.filter((e) => e.action === 'artifact.visibility')
      assert.equal(changes.length, 12 * USERS.length)
      for (const e of changes) assert.equal(e.target_id, own.get(e.actor), JSON.stringify(e))
    })

    test('a 2026-07-28 client: the same tools and the same isolation', async () => {
      const modern = { versionNegotiation: { mode: { pin: '2026-07-28' } } } as const
      const alice = await as('alice', modern)
      const admin = await as('root-admin', modern)
      const tools = await alice.tools()
      assert.ok(tools.includes('artsvc_list') && !tools.includes(ADMIN_TOOL), tools.join())
      assert.ok((await admin.tools()).includes(ADMIN_TOOL))
      const [mine, all] = await Promise.all([alice.call('artsvc_list'), admin.call(ADMIN_TOOL)])
      const rows = mine.out.artifacts as { owner: string; role: string }[]
      assert.ok(rows.some((a) => a.role === 'owner'))
      for (const a of rows) assert.equal(a.role === 'owner', a.owner === 'alice', JSON.stringify(a))
      assert.ok(all.out.artifacts.length >= mine.out.artifacts.length)
      const p = await alice.call('artsvc_publish', { title: 'Modern', files: { 'index.html': 'new era' } })
      assert.ok(p.ok, JSON.stringify(p.error))
      assert.equal(p.out.version.number, 1)

      // No sessions: the 2025 session operations answer 405, a body that is not JSON a parse error.
      const auth = await bearer(backends.op, 'alice')
      for (const method of ['GET', 'DELETE']) {
        const r = await fetch(`${h.base}/mcp`, { method, headers: { ...auth, accept: 'text/event-stream' } })
        assert.equal(r.status, 405, method)
        await r.arrayBuffer()
      }
      const bad = await fetch(`${h.base}/mcp`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: '{not json',
      })
      assert.equal(bad.status, 400)
      assert.equal(((await bad.json()) as { error: { code: number } }).error.code, -32700)
    })
  })
}
