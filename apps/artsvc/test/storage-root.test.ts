/**
 * `artsvc serve` as a child process with a storage root (or SQLite folder) where no folder can
 * be made: under /proc (Node's recursive mkdir never returned there), below a regular file, on
 * a read-only mount. Start-up ends at once with exit 1 and one line naming the path and the
 * cause, on SQLite and on PostgreSQL, and touches nothing on the way.
 */
import assert from 'node:assert/strict'
import { execFile, execFileSync } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import {
  freePort,
  metric,
  mountSmallDisk,
  type Postgres,
  startChild,
  startPostgres,
  tempDir,
  waitFor,
} from '@gatehouse/testkit'
import { baseEnv } from './helpers/harness.ts'

const MAIN = new URL('../src/main.ts', import.meta.url).pathname

let pg: Postgres
const dir = tempDir('artsvc-root-')
before(async () => {
  pg = await startPostgres()
})
after(async () => {
  await pg?.stop()
  dir.remove()
})

/** Run `artsvc serve` to its end (a hang is the test runner's timeout, the bug this guards against). */
function serveEnv(port: number): Record<string, string> {
  return {
    ...baseEnv(dir.path, port, undefined),
    // Edge access on loopback: nothing is fetched at start.
    ARTSVC_AUTH_MODE: 'edge_access',
    ARTSVC_EDGE_ACCESS_TEAM_DOMAIN: 'http://127.0.0.1:9',
    ARTSVC_EDGE_ACCESS_AUD: 'artsvc-test',
    PATH: process.env.PATH ?? '',
  }
}

/**
 * Run `artsvc serve` to its end. A hang (the bug this guards against) is the test runner's
 * timeout, which aborts `signal`; SIGKILL, since a process stuck in a synchronous loop never
 * handles SIGTERM.
 */
async function serve(
  signal: AbortSignal,
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string }> {
  const port = await freePort()
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, 'serve'],
      { env: { ...serveEnv(port), ...env }, signal, killSignal: 'SIGKILL' },
      (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
    )
  })
}

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`${backend}: a storage root where no folder can be made stops start-up with one line`, () => {
    const database = async (): Promise<Record<string, string>> =>
      backend === 'postgres' ? { ARTSVC_DATABASE_URL: await pg.createDatabase() } : {}

    test('under /proc, whose mkdir answers ENOENT below an existing folder', async (t) => {
      const root = `/proc/self/artsvc-${process.pid}/artifacts`
      const r = await serve(t.signal, { ARTSVC_STORAGE_ROOT: root, ...(await database()) })
      assert.deepEqual(r, {
        code: 1,
        stderr: `artsvc: storage root ${root} (ARTSVC_STORAGE_ROOT) cannot be used: cannot create /proc/self/artsvc-${process.pid}: the file system there does not allow new folders (ENOENT)\n`,
      })
      // /proc itself exists: the root's own folders are what cannot be made.
      const top = await serve(t.signal, { ARTSVC_STORAGE_ROOT: '/proc', ...(await database()) })
      assert.deepEqual(top, {
        code: 1,
        stderr:
          'artsvc: storage root /proc (ARTSVC_STORAGE_ROOT) cannot be used: cannot create /proc/staging: the file system there does not allow new folders (ENOENT)\n',
      })
    })

    test('below a regular file, or a regular file itself; the file is left as it was', async (t) => {
      const file = join(dir.path, `${backend}-not-a-folder`)
      writeFileSync(file, 'keep me')
      for (const root of [join(file, 'artifacts', 'deeper'), file]) {
        const r = await serve(t.signal, { ARTSVC_STORAGE_ROOT: root, ...(await database()) })
        assert.deepEqual(r, {
          code: 1,
          stderr: `artsvc: storage root ${root} (ARTSVC_STORAGE_ROOT) cannot be used: ${file} is a file, not a folder\n`,
        })
      }
      assert.equal(readFileSync(file, 'utf8'), 'keep me')
      // A file where the root's staging folder goes.
      const root = join(dir.path, `${backend}-staging-file`)
      mkdirSync(root)
      writeFileSync(join(root, 'staging'), 'keep me too')
      const r = await serve(t.signal, { ARTSVC_STORAGE_ROOT: root, ...(await database()) })
      assert.deepEqual(r, {
        code: 1,
        stderr: `artsvc: storage root ${root} (ARTSVC_STORAGE_ROOT) cannot be used: ${join(root, 'staging')} is a file, not a folder\n`,
      })
      assert.equal(readFileSync(join(root, 'staging'), 'utf8'), 'keep me too')
    })

    test('on a read-only mount, whether the root is there already or not', async (t) => {
      const disk = mountSmallDisk('artsvc-ro-', 4)
      t.after(() => disk.remove())
      mkdirSync(join(disk.path, 'there'))
      execFileSync('mount', ['-o', 'remount,ro', disk.path])
      const missing = join(disk.path, 'artifacts')
      const r = await serve(t.signal, { ARTSVC_STORAGE_ROOT: missing, ...(await database()) })
      assert.deepEqual(r, {
        code: 1,
        stderr: `artsvc: storage root ${missing} (ARTSVC_STORAGE_ROOT) cannot be used: cannot create ${missing}: the file system is read-only (EROFS)\n`,
      })
      const there = join(disk.path, 'there')
      const r2 = await serve(t.signal, { ARTSVC_STORAGE_ROOT: there, ...(await database()) })
      assert.deepEqual(r2, {
        code: 1,
        stderr: `artsvc: storage root ${there} (ARTSVC_STORAGE_ROOT) cannot be used: cannot create ${join(there, 'staging')}: the file system is read-only (EROFS)\n`,
      })
      assert.deepEqual(readdirSync(disk.path).sort(), ['there'])
    })
  })
}

test('a SQLite file under /proc: one line naming the database and its folder', async (t) => {
  const root = join(dir.path, 'root-for-proc-db')
  const location = `/proc/self/artsvc-${process.pid}/artsvc.db`
  const r = await serve(t.signal, { ARTSVC_STORAGE_ROOT: root, ARTSVC_DATABASE_URL: `sqlite:${location}` })
  assert.deepEqual(r, {
    code: 1,
    stderr: `artsvc: database ${location}: folder /proc/self/artsvc-${process.pid} cannot be used: cannot create /proc/self/artsvc-${process.pid}: the file system there does not allow new folders (ENOENT)\n`,
  })
})

test('a new storage root is made owner-only with its folders, and the server starts', async (t) => {
  const root = join(dir.path, 'fresh', 'nested', 'artifacts')
  const port = await freePort()
  const child = await startChild({
    name: 'artsvc',
    command: process.execPath,
    args: [MAIN, 'serve'],
    env: { ...serveEnv(port), ARTSVC_STORAGE_ROOT: root },
    logFile: join(dir.path, 'fresh.log'),
    probe: async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 204,
  })
  t.after(() => child.stop())
  for (const folder of ['objects', 'staging', 'tmp']) assert.ok(statSync(join(root, folder)).isDirectory(), folder)
  assert.ok(statSync(join(root, 'artsvc.db')).isFile())
  for (const path of [join(dir.path, 'fresh'), join(dir.path, 'fresh', 'nested'), root, join(root, 'staging')])
    assert.equal(statSync(path).mode & 0o777, 0o700, path)
})

test('the maintenance job says in /metrics when it last ended well, so its stopping is an alert', async (t) => {
  const root = join(dir.path, 'job-metrics')
  const port = await freePort()
  const child = await startChild({
    name: 'artsvc',
    command: process.execPath,
    args: [MAIN, 'serve'],
    env: { ...serveEnv(port), ARTSVC_STORAGE_ROOT: root, ARTSVC_MAINTENANCE_INTERVAL: '1s' },
    logFile: join(dir.path, 'job-metrics.log'),
    probe: async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 204,
  })
  t.after(() => child.stop())
  const text = await waitFor('a maintenance run in /metrics', async () => {
    const body = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    return metric(body, 'artsvc_job_last_success_timestamp_seconds', { job: 'maintenance' }) !== undefined && body
  })
  const at = metric(text, 'artsvc_job_last_success_timestamp_seconds', { job: 'maintenance' })!
  assert.ok(Math.abs(at - Date.now() / 1000) < 60, String(at))
  assert.equal(metric(text, 'artsvc_job_failures_total', { job: 'maintenance' }), 0)
})
