/**
 * Publisher-to-viewer grants (ARTSVC_PUBLISHER_VIEWERS, spec rule 10) on SQLite and
 * PostgreSQL: strict parsing, startup refusal of unknown recipients, backfill at startup
 * (idempotent across restarts, editor grants preserved, visibility untouched), grants in
 * the publication transaction for REST and MCP publishes and new versions, and rollback
 * when a recipient is gone at publication.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { StartupError } from '@gatehouse/kit'
import { tempDir } from '@gatehouse/testkit'
import { loadArtsvcConfig } from '../src/config.ts'
import {
  type Backends,
  bearer,
  type Harness,
  mustPublish,
  publishZip,
  startArtsvc,
  startBackends,
} from './helpers/harness.ts'
import { connectMcp } from './helpers/mcp-client.ts'
import { sampleBundle } from './helpers/zip-builder.ts'

let backends: Backends
before(async () => {
  backends = await startBackends()
})
after(() => backends?.stop())

test('the mapping is strict JSON: every problem is named', () => {
  const base = {
    ARTSVC_PUBLIC_URL: 'http://127.0.0.1:1',
    ARTSVC_CONTENT_URL: 'http://localhost:1',
    ARTSVC_COOKIE_SECRET: 'x'.repeat(32),
    ARTSVC_AUTH_MODE: 'edge_access',
    ARTSVC_EDGE_ACCESS_TEAM_DOMAIN: 'https://team.example',
    ARTSVC_EDGE_ACCESS_AUD: 'aud',
  }
  for (const [raw, pattern] of [
    ['{"alice": ["bob"', /not valid JSON/],
    ['["alice"]', /must be a JSON object/],
    ['{"alice": "bob"}', /must be an array/],
    ['{"alice": ["bob", ""]}', /must be an array of non-empty subjects/],
    ['{"alice": [1]}', /must be an array/],
  ] as const) {
    assert.throws(
      () => loadArtsvcConfig({ env: { ...base, ARTSVC_PUBLISHER_VIEWERS: raw } }),
      (err: StartupError) => err.lines.some((l) => l.startsWith('ARTSVC_PUBLISHER_VIEWERS:') && pattern.test(l)),
    )
  }
  const ok = loadArtsvcConfig({
    env: { ...base, ARTSVC_PUBLISHER_VIEWERS: '{"alice": ["bob", "bob", "edge_access:c"]}' },
  })
  assert.deepEqual(ok.publisherViewerMap, { alice: ['bob', 'edge_access:c'] })
})

for (const dbName of ['sqlite', 'postgres'] as const) {
  describe(`publisher-to-viewer grants on ${dbName}`, () => {
    const root = tempDir('artsvc-pv-')
    let dbUrl: string
    const running: Harness[] = []
    const start = async (mapping?: Record<string, string[]>) => {
      const h = await startArtsvc({
        op: backends.op,
        databaseUrl: dbUrl,
        env: {
          ARTSVC_STORAGE_ROOT: root.path,
          ...(mapping ? { ARTSVC_PUBLISHER_VIEWERS: JSON.stringify(mapping) } : {}),
        },
      })
      running.push(h)
      return h
    }
    const stop = async (h: Harness) => {
      running.splice(running.indexOf(h), 1)
      await h.svc.close()
    }
    const grantsOf = async (h: Harness, artifact: string) => {
      const rows = await h.svc.ctx.database.db
        .selectFrom('grants')
        .innerJoin('users', 'users.id', 'grants.user_id')
        .select(['users.oidc_subject', 'grants.role'])
        .where('grants.artifact_id', '=', artifact)
        .orderBy('users.oidc_subject')
        .execute()
      return Object.fromEntries(rows.map((r) => [r.oidc_subject, r.role]))
    }

    before(async () => {
      dbUrl = dbName === 'postgres' ? await backends.pg.createDatabase() : `sqlite:${root.path}/artsvc.db`
    })
    after(async () => {
      for (const h of running) await h.svc.close()
      root.remove()
    })

    test('unknown recipients stop startup with one line each', async () => {
      await assert.rejects(start({ alice: ['ghost-1'], bob: ['ghost-2'] }), (err: StartupError) => {
        assert.deepEqual(err.lines, [
          'ARTSVC_PUBLISHER_VIEWERS: recipient "ghost-1" is not a user (they must sign in once)',
          'ARTSVC_PUBLISHER_VIEWERS: recipient "ghost-2" is not a user (they must sign in once)',
        ])
        return true
      })
    })

    test('backfill at startup is idempotent and keeps editor grants, owners and visibility', async () => {
      const h1 = await start()
      for (const sub of ['alice', 'bob', 'carol', 'dave'])
        assert.equal((await fetch(`${h1.base}/api/v1/me`, { headers: await bearer(backends.op, sub) })).status, 200)
      const alice = await bearer(backends.op, 'alice')
      const a1 = await mustPublish(h1, alice, sampleBundle(), { title: 'one' })
      const a2 = await mustPublish(h1, alice, sampleBundle(), { title: 'two' })
      const byDave = await mustPublish(h1, await bearer(backends.op, 'dave'), sampleBundle(), { title: 'dave' })
      const put = await fetch(`${h1.base}/api/v1/artifacts/${a1.artifact}/grants`, {
        method: 'PUT',
        headers: { ...alice, 'content-type': 'application/json' },
        body: JSON.stringify({ subject: 'bob', role: 'editor' }),
      })
      assert.equal(put.status, 200)
      await stop(h1)

      const mapping = { alice: ['bob', 'carol', 'alice'] }
      const h2 = await start(mapping)
      assert.deepEqual(await grantsOf(h2, a1.artifact), { bob: 'editor', carol: 'viewer' })
      assert.deepEqual(await grantsOf(h2, a2.artifact), { bob: 'viewer', carol: 'viewer' })
      assert.deepEqual(await grantsOf(h2, byDave.artifact), {})
      const countAudit = async (h: Harness) =>
        (
          await h.svc.ctx.database.db
            .selectFrom('audit_events')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('action', '=', 'grant.put')
            .executeTakeFirstOrThrow()
        ).n
      const audits = Number(await countAudit(h2))
      await stop(h2)
      const h3 = await start(mapping)
      assert.deepEqual(await grantsOf(h3, a1.artifact), { bob: 'editor', carol: 'viewer' })
      assert.deepEqual(await grantsOf(h3, a2.artifact), { bob: 'viewer', carol: 'viewer' })
      assert.equal(Number(await countAudit(h3)), audits, 'a restart adds nothing')
      const a1Row = await h3.svc.ctx.database.db
        .selectFrom('artifacts')
        .selectAll()
        .where('id', '=', a1.artifact)
        .executeTakeFirstOrThrow()
      assert.equal(a1Row.visibility, 'private')

      // Publication through REST, MCP and new versions grants in the same transaction.
      const viaRest = await mustPublish(h3, alice, sampleBundle(), { title: 'rest' })
      assert.deepEqual(await grantsOf(h3, viaRest.artifact), { bob: 'viewer', carol: 'viewer' })
      const mcp = await connectMcp(h3.base, alice)
      const viaMcp = await mcp.call('artsvc_publish', { title: 'mcp', files: { 'index.html': 'hi' } })
      await mcp.close()
      assert.deepEqual(await grantsOf(h3, viaMcp.out.artifact.id), { bob: 'viewer', carol: 'viewer' })
      // A new version by a mapped editor of someone else's artifact: their recipients get viewer grants.
      await stop(h3)
      const h4 = await start({ ...mapping, bob: ['dave'] })
      // bob has published nothing yet: no backfill for him.
      assert.deepEqual(await grantsOf(h4, a1.artifact), { bob: 'editor', carol: 'viewer' })
      const v2 = await mustPublish(h4, await bearer(backends.op, 'bob'), sampleBundle(), {
        title: 'one v2',
        artifact: a1.artifact,
      })
      assert.equal(v2.version, 2)
      assert.deepEqual(await grantsOf(h4, a1.artifact), { bob: 'editor', carol: 'viewer', dave: 'viewer' })
      // Removing a mapping revokes nothing.
      await stop(h4)
      const h5 = await start()
      assert.deepEqual(await grantsOf(h5, a1.artifact), { bob: 'editor', carol: 'viewer', dave: 'viewer' })
      await stop(h5)
    })

    test('a recipient missing at publication rolls the commit back', async () => {
      const h0 = await start()
      for (const sub of ['erin', 'zed'])
        assert.equal((await fetch(`${h0.base}/api/v1/me`, { headers: await bearer(backends.op, sub) })).status, 200)
      await stop(h0)
      const h = await start({ erin: ['zed'] })
      const erin = await bearer(backends.op, 'erin')
      const zed = await h.svc.ctx.database.db
        .selectFrom('users')
        .selectAll()
        .where('oidc_subject', '=', 'zed')
        .executeTakeFirstOrThrow()
      await h.svc.ctx.database.db.deleteFrom('users').where('id', '=', zed.id).execute()
      const before = await h.svc.ctx.database.db.selectFrom('versions').select('id').execute()
      const refused = await publishZip(h, erin, sampleBundle(), { title: 'refused' })
      assert.equal(refused.status, 409)
      assert.equal((refused.body.error as { code: string }).code, 'viewer_recipient_missing')
      assert.match((refused.body.error as { message: string }).message, /zed/)
      assert.equal((await h.svc.ctx.database.db.selectFrom('versions').select('id').execute()).length, before.length)
      const erinId = (
        await h.svc.ctx.database.db
          .selectFrom('users')
          .select('id')
          .where('oidc_subject', '=', 'erin')
          .executeTakeFirstOrThrow()
      ).id
      assert.equal(
        (await h.svc.ctx.database.db.selectFrom('artifacts').select('id').where('owner_id', '=', erinId).execute())
          .length,
        0,
      )
      const uploads = await h.svc.ctx.database.db
        .selectFrom('uploads')
        .select('state')
        .where('user_id', '=', erinId)
        .execute()
      assert.ok(uploads.every((u) => u.state !== 'committed'))
      // Once zed is back, publishing works and grants.
      assert.equal((await fetch(`${h.base}/api/v1/me`, { headers: await bearer(backends.op, 'zed') })).status, 200)
      const ok = await mustPublish(h, erin, sampleBundle(), { title: 'ok' })
      assert.deepEqual(await grantsOf(h, ok.artifact), { zed: 'viewer' })
      await stop(h)
    })
  })
}
