import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { after, describe, test } from 'node:test'
import { type Postgres, startPostgres, waitFor } from '@gatehouse/testkit'
import { createLogger, type Database, isDatabaseUnavailable, openDatabase, sql } from '../src/index.ts'
import { startRelay } from './fixtures/pg-relay.ts'

let shared: Postgres | undefined
after(async () => {
  await shared?.stop()
})
const fresh = async () => {
  shared ??= await startPostgres()
  return shared.createDatabase()
}

/** What a session's handlers were told, and the log lines it wrote. */
function recorder() {
  const lines: Array<{ level: string; msg: string; err?: { message: string } }> = []
  const stream = new PassThrough()
  stream.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line))
  })
  const seen = { payloads: [] as string[], ups: 0, downs: [] as Error[], lines }
  const handlers = {
    onNotify: (payload: string) => seen.payloads.push(payload),
    onUp: () => seen.ups++,
    onDown: (err: Error) => seen.downs.push(err),
    logger: createLogger({ name: 'listen-test', destination: stream }),
    retryMs: 100,
  }
  return { seen, handlers }
}

const notify = (d: Database<unknown>, channel: string, payload: string) =>
  sql`select pg_notify(${channel}, ${payload})`.execute(d.db)

/** The server processes of kit_jobs sessions (their last statement was the LISTEN or a heartbeat). */
async function listeners(server: Postgres, database: string): Promise<number[]> {
  const { rows } = await server.query(
    `select pid from pg_stat_activity
      where datname = '${database}' and query like '%LISTEN kit_jobs%' and pid <> pg_backend_pid()`,
  )
  return rows.map((row) => Number(row.pid))
}

describe('PostgreSQL LISTEN sessions', () => {
  test('deliver NOTIFYs on their channel, and listen again after the server ends the session', async (t) => {
    const url = await fresh()
    const d = await openDatabase<unknown>({ url })
    t.after(() => d.close())
    const { seen, handlers } = recorder()
    const session = await d.listen!('kit_jobs', handlers)
    assert.equal(session.listening, true)
    assert.equal(seen.ups, 1)
    await notify(d, 'kit_other', 'elsewhere')
    await notify(d, 'kit_jobs', 'one')
    await notify(d, 'kit_jobs', '')
    await waitFor('two NOTIFYs', () => seen.payloads.length === 2)
    assert.deepEqual(seen.payloads, ['one', ''])

    const [pid] = await listeners(shared!, new URL(url).pathname.slice(1))
    assert.ok(pid)
    await shared!.query(`select pg_terminate_backend(${pid})`)
    await waitFor('the session back', () => seen.ups === 2)
    assert.equal(seen.downs.length, 1)
    assert.equal(session.listening, true)
    await notify(d, 'kit_jobs', 'two')
    await waitFor('the NOTIFY after the reconnect', () => seen.payloads.includes('two'))
    assert.deepEqual(
      seen.lines.map((line) => [line.level, line.msg.replace(/[\d.]+ s$/, 'N s')]),
      [
        ['warn', 'LISTEN kit_jobs: not listening; reconnecting every 100 ms'],
        ['info', 'LISTEN kit_jobs: listening again after N s'],
      ],
    )
    await session.close()
    assert.equal(session.listening, false)
  })

  test('a server down at the first attempt, and later, is retried until it is back', async (t) => {
    const server = await startPostgres()
    t.after(() => server.stop())
    const d = await openDatabase<unknown>({ url: await server.createDatabase() })
    t.after(() => d.close())
    const { seen, handlers } = recorder()
    await server.halt()
    // Resolves after the first attempt, without listening: the service starts anyway.
    const session = await d.listen!('kit_jobs', handlers)
    assert.equal(session.listening, false)
    assert.equal(seen.ups, 0)
    assert.equal(seen.downs.length, 1)
    assert.ok(isDatabaseUnavailable(seen.downs[0]))
    await new Promise((resolve) => setTimeout(resolve, 350))
    assert.equal(seen.downs.length, 1, 'failed reconnects are one outage, told once')
    await server.resume()
    await waitFor('listening', () => session.listening)
    assert.equal(seen.ups, 1)
    await notify(d, 'kit_jobs', 'after')
    await waitFor('the NOTIFY', () => seen.payloads.includes('after'))

    // Lost while listening: told once, back after the restart.
    await server.halt()
    await waitFor('the loss', () => seen.downs.length === 2)
    assert.equal(session.listening, false)
    await server.resume()
    await waitFor('listening again', () => seen.ups === 2)
    await notify(d, 'kit_jobs', 'again')
    await waitFor('the NOTIFY after the restart', () => seen.payloads.includes('again'))
  })

  test('a session gone silent is noticed by its heartbeat: its socket is destroyed and a new one listens', async (t) => {
    const url = await fresh()
    const relay = await startRelay(t, url)
    const d = await openDatabase<unknown>({
      url: relay.url,
      poolSize: 1,
    })
    t.after(() => d.close())
    // The pool's connection first, so the session's is the second one through the relay.
    await sql`select 1`.execute(d.db)
    const { seen, handlers } = recorder()
    const session = await d.listen!('kit_jobs', { ...handlers, heartbeatMs: 200 })
    assert.equal(relay.open.length, 2)
    const frozen = relay.open[1]!
    // A few heartbeats answered: a live session is not dropped.
    await new Promise((resolve) => setTimeout(resolve, 700))
    assert.equal(seen.downs.length, 0)
    relay.freeze(frozen)
    await waitFor('the heartbeat to miss', () => seen.downs.length === 1)
    assert.match(seen.downs[0]!.message, /no answer to a heartbeat within 200 ms/)
    await waitFor('the silent socket closed', () => frozen.destroyed && !relay.open.includes(frozen))
    await waitFor('a new session', () => seen.ups === 2 && session.listening)
    await notify(d, 'kit_jobs', 'through')
    await waitFor('the NOTIFY on the new session', () => seen.payloads.includes('through'))
  })

  test('closed sessions end their connection and call nothing more; the database closes the rest', async () => {
    const url = await fresh()
    const name = new URL(url).pathname.slice(1)
    const d = await openDatabase<unknown>({ url })
    const a = recorder()
    const b = recorder()
    const first = await d.listen!('kit_jobs', a.handlers)
    const second = await d.listen!('kit_jobs', b.handlers)
    assert.equal((await listeners(shared!, name)).length, 2)
    await first.close()
    await notify(d, 'kit_jobs', 'late')
    // The open session has it, so it was sent after the close: the closed one was not told.
    await waitFor('the open session told', () => b.seen.payloads.includes('late'))
    assert.deepEqual(a.seen.payloads, [])
    await waitFor('one session left', async () => (await listeners(shared!, name)).length === 1)

    // A close while a reconnect is pending: no connection is opened after it.
    const [pid] = await listeners(shared!, name)
    await shared!.query(`select pg_terminate_backend(${pid})`)
    await waitFor('the loss', () => b.seen.downs.length === 1)
    await second.close()
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal(b.seen.ups, 1)
    assert.deepEqual(await listeners(shared!, name), [])

    // One left open when the database closes: closed with it, and its backend gone.
    await d.listen!('kit_jobs', recorder().handlers)
    assert.equal((await listeners(shared!, name)).length, 1)
    await d.close()
    await waitFor('no session left', async () => (await listeners(shared!, name)).length === 0)

    // Closed while its first attempt is still connecting: the session ends as it comes up.
    const early = await openDatabase<unknown>({ url })
    const pending = early.listen!('kit_jobs', recorder().handlers)
    await early.close()
    assert.equal((await pending).listening, false)
    await waitFor('no session left', async () => (await listeners(shared!, name)).length === 0)
  })

  test('handlers that throw are logged and the session goes on', async (t) => {
    const url = await fresh()
    const d = await openDatabase<unknown>({ url })
    t.after(() => d.close())
    const { seen, handlers } = recorder()
    await d.listen!('kit_jobs', {
      ...handlers,
      onNotify: (payload) => {
        seen.payloads.push(payload)
        if (payload === 'bad') throw new Error('notify bug')
      },
      onUp: () => {
        seen.ups++
        throw new Error('up bug')
      },
      onDown: () => {
        throw new Error('down bug')
      },
    })
    await notify(d, 'kit_jobs', 'bad')
    await notify(d, 'kit_jobs', 'good')
    await waitFor('both NOTIFYs', () => seen.payloads.length === 2)
    // Thrown from the reconnect timer's side too: logged, and the session comes back.
    const [pid] = await listeners(shared!, new URL(url).pathname.slice(1))
    await shared!.query(`select pg_terminate_backend(${pid})`)
    await waitFor('the session back', () => seen.ups === 2)
    await notify(d, 'kit_jobs', 'after')
    await waitFor('the NOTIFY after the reconnect', () => seen.payloads.includes('after'))
    const failures = seen.lines.filter((line) => line.level === 'error').map((line) => line.err?.message)
    assert.deepEqual(failures, ['up bug', 'notify bug', 'down bug', 'up bug'])
  })

  test('channel names are identifiers LISTEN takes unquoted; SQLite has no LISTEN', async (t) => {
    const d = await openDatabase<unknown>({ url: await fresh() })
    t.after(() => d.close())
    for (const bad of ['Jobs', 'jobs; drop table x', '', '1jobs', 'x'.repeat(64)]) {
      await assert.rejects(d.listen!(bad, recorder().handlers), TypeError)
    }
    const lite = await openDatabase<unknown>({ url: 'sqlite::memory:' })
    assert.equal(lite.listen, undefined)
    await lite.close()
  })
})
