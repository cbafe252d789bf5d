/**
 * Maintenance, host routing (421), readiness and metrics, on SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { test } from 'node:test'
import { sql } from 'kysely'
import { request } from 'undici'
import { type ApiSuite, apiSuites } from './helpers/api-suite.ts'
import { publishZip } from './helpers/harness.ts'
import { buildZip, sampleBundle } from './helpers/zip-builder.ts'

const MAIN = new URL('../src/main.ts', import.meta.url).pathname

function artsvc(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { env, encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

apiSuites('operations', (s: ApiSuite) => {
  test('maintenance removes expired uploads, abandoned files, expired sessions and old audit records', async () => {
    const created = await s.call('owner', 'POST', '/api/v1/artifacts/uploads', {
      title: 'abandoned',
      entrypoint: 'index.html',
    })
    const put = await fetch(created.body.upload_url, {
      method: 'PUT',
      headers: { 'x-artsvc-upload-token': created.body.upload_token },
      body: new Uint8Array(sampleBundle()),
    })
    const { sha256 } = (await put.json()) as { sha256: string }
    const staged = join(s.h.svc.ctx.stagingDir, `${created.body.id}.${sha256}.zip`)
    assert.ok(existsSync(staged))
    writeFileSync(join(s.h.svc.ctx.stagingDir, 'AAAAAAAAAAAAAAAA.zip'), 'orphan')
    const db = s.h.svc.ctx.database.db
    await db
      .insertInto('sessions')
      .values({
        token_hash: 'a'.repeat(64),
        user_id: (await db.selectFrom('users').select('id').executeTakeFirstOrThrow()).id,
        groups: '[]',
        created_at: 0,
        expires_at: s.clock.now() + 1000,
      })
      .execute()
    await db
      .insertInto('oidc_states')
      .values({
        state_hash: 'b'.repeat(64),
        nonce: 'n',
        code_verifier: 'v',
        return_to: '/',
        expires_at: s.clock.now() + 1000,
      })
      .execute()
    await db
      .insertInto('audit_events')
      .values({
        id: 'old-event-000001',
        at: s.clock.now() - s.h.config.auditRetention - 1,
        actor_id: null,
        actor_subject: null,
        action: 'x',
        target_type: 'artifact',
        target_id: 'x',
        details: '{}',
      })
      .execute()
    const first = await s.h.svc.maintenance()
    assert.equal(first.auditEvents, 1)
    assert.ok(first.files >= 1)
    assert.ok(!existsSync(join(s.h.svc.ctx.stagingDir, 'AAAAAAAAAAAAAAAA.zip')))
    assert.ok(existsSync(staged), 'a live session keeps its file')
    s.clock.advance(s.h.config.uploadTtl + 5000)
    try {
      const second = await s.h.svc.maintenance()
      assert.ok(second.uploads >= 1)
      assert.ok(second.sessions >= 1)
      assert.ok(second.oidcStates >= 1)
      assert.ok(!existsSync(staged))
      assert.equal(
        await db.selectFrom('uploads').select('id').where('id', '=', created.body.id).executeTakeFirst(),
        undefined,
      )
      // Nothing left due: the next run only reads, so it also runs on a database that refuses
      // writes (a standby after a failover). SQLite: the connection made query-only; PostgreSQL:
      // statement triggers, which fire even for a delete of no row.
      const tables = ['uploads', 'sessions', 'oidc_states', 'audit_events']
      const sqlite = s.h.svc.ctx.database.sqlite
      if (sqlite) sqlite.exec('pragma query_only = 1')
      else {
        await sql`create function refuse_write() returns trigger language plpgsql as $$
          begin raise exception 'written while read-only'; end $$`.execute(db)
        for (const table of tables)
          await sql`create trigger refuse_write before delete or update or insert on ${sql.table(table)}
            for each statement execute function refuse_write()`.execute(db)
      }
      try {
        assert.deepEqual(await s.h.svc.maintenance(), {
          uploads: 0,
          files: 0,
          sessions: 0,
          oidcStates: 0,
          auditEvents: 0,
        })
      } finally {
        if (sqlite) sqlite.exec('pragma query_only = 0')
        else {
          for (const table of tables) await sql`drop trigger refuse_write on ${sql.table(table)}`.execute(db)
          await sql`drop function refuse_write()`.execute(db)
        }
      }
    } finally {
      s.clock.advance(-(s.h.config.uploadTtl + 5000))
    }
  })

  test('one listener, two origins: routing by Host, 421 for unknown hosts', async () => {
    const viaHost = (host: string, path: string) =>
      request(`${s.h.base}${path}`, { headers: { host } }).then(async (r) => ({
        status: r.statusCode,
        body: await r.body.text(),
      }))
    const unknown = await viaHost('evil.example', '/api/v1/artifacts')
    assert.equal(unknown.status, 421)
    assert.equal(JSON.parse(unknown.body).error.code, 'misdirected_request')
    assert.equal((await viaHost(`localhost:${s.h.port}`, '/api/v1/artifacts')).status, 404)
    assert.equal((await viaHost(`LOCALHOST:${s.h.port}`, '/__artsvc/storage-shim.js')).status, 200)
    assert.equal((await viaHost(`127.0.0.1:${s.h.port}`, '/__artsvc/storage-shim.js')).status, 404)
    assert.equal((await viaHost('evil.example', '/healthz')).status, 200)
    const ready = await fetch(`${s.h.base}/readyz`)
    assert.equal(ready.status, 204)
    // One publish, one refused bundle, one refused share opening, then the counters.
    await publishZip(
      s.h,
      s.auth.owner,
      buildZip([
        { name: 'index.html', data: 'x' },
        { name: '../x', data: 'x' },
      ]),
    )
    const share = await s.call('owner', 'POST', `/api/v1/artifacts/${s.art.artifact}/shares`, { max_views: 1 })
    assert.equal((await fetch(share.body.url, { redirect: 'manual' })).status, 303)
    assert.equal((await fetch(share.body.url, { redirect: 'manual' })).status, 410)
    const metrics = await (await fetch(`${s.h.base}/metrics`)).text()
    assert.match(metrics, /^artsvc_publishes_total [1-9]\d*$/m)
    assert.match(metrics, /^artsvc_bundle_rejections_total\{reason="path_traversal"\} [1-9]/m)
    assert.match(metrics, /^artsvc_share_openings_total\{result="refused"\} [1-9]/m)
    assert.doesNotMatch(metrics, /\/t\/[A-Za-z0-9_-]{16}\./, 'no tickets in metric labels')
  })

  test('viewer tickets stop working after ARTSVC_VIEWER_TICKET_TTL', async () => {
    const page = await (await fetch(`${s.h.base}/a/${s.art.artifact}`, { headers: s.auth.owner })).text()
    const frame = /<iframe[^>]*src="([^"]+)"/.exec(page)![1]!.replaceAll('&amp;', '&')
    assert.equal((await fetch(frame)).status, 200)
    s.clock.advance(s.h.config.viewerTicketTtl + 1000)
    try {
      const late = await fetch(frame)
      assert.equal(late.status, 403)
      assert.equal(((await late.json()) as { error: { code: string } }).error.code, 'ticket_invalid')
    } finally {
      s.clock.advance(-(s.h.config.viewerTicketTtl + 1000))
    }
  })

  test('readiness fails while storage is unusable', async () => {
    const objects = join(s.h.root, 'objects')
    rmSync(objects, { recursive: true, force: true })
    writeFileSync(objects, 'not a directory')
    try {
      const r = await fetch(`${s.h.base}/readyz`)
      assert.equal(r.status, 503)
    } finally {
      rmSync(objects, { force: true })
    }
    assert.equal((await fetch(`${s.h.base}/readyz`)).status, 204)
  })

  test('artsvc backup while serve runs: a checked SQLite copy naming the published artifact; PostgreSQL is pointed to pg_dump', async () => {
    const file = join(s.h.root, '..', `${s.h.svc.ctx.database.kind}-${s.art.artifact}-backup.db`)
    const env: Record<string, string> = { PATH: process.env.PATH ?? '', ARTSVC_STORAGE_ROOT: s.h.root }
    if (s.h.svc.ctx.database.kind === 'postgres') env.ARTSVC_DATABASE_URL = s.h.config.database
    const backup = () => artsvc(['backup', file], env)
    const first = await backup()
    try {
      if (s.h.svc.ctx.database.kind === 'postgres') {
        assert.deepEqual(
          [first.code, first.stderr],
          [1, 'artsvc: backup copies a SQLite database; for PostgreSQL use pg_dump\n'],
        )
        return
      }
      assert.equal(first.code, 0, first.stderr)
      assert.match(
        first.stdout,
        /^backed up to .*-backup\.db \(\d+\.\d MiB, checked\); now copy objects\/ and manifests\/ under .* after it\n$/,
      )
      assert.equal(statSync(file).mode & 0o777, 0o600)
      const copy = new DatabaseSync(file, { readOnly: true })
      try {
        const row = copy.prepare('select id from artifacts where id = ?').get(s.art.artifact)
        assert.deepEqual({ ...row }, { id: s.art.artifact })
      } finally {
        copy.close()
      }
      const again = await backup()
      assert.deepEqual([again.code, again.stderr], [1, `artsvc: ${file} exists; back up to a new file\n`])
      const missing = await artsvc(['backup', `${file}.2`], { ...env, ARTSVC_STORAGE_ROOT: join(s.h.root, 'nowhere') })
      assert.equal(missing.code, 1)
      assert.match(missing.stderr, /does not exist; give --database or --storage-root/)
    } finally {
      rmSync(file, { force: true })
    }
  })
})
