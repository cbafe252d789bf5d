import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, describe, test } from 'node:test'
import pg from 'pg'
import { startPostgres, startRedis } from '../src/index.ts'

function roundTrip(port: number, payload: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(payload))
    socket.once('data', (d) => {
      socket.destroy()
      resolve(d.toString())
    })
    socket.once('error', reject)
  })
}

describe('startPostgres', () => {
  test('starts, creates isolated databases, and stops', async () => {
    const server = await startPostgres()
    after(() => server.stop())
    const a = await server.createDatabase()
    const b = await server.createDatabase()
    assert.notEqual(a, b)
    const client = new pg.Client({ connectionString: a })
    await client.connect()
    await client.query('create table t (x int)')
    await client.query('insert into t values (42)')
    const { rows } = await client.query('select x from t')
    await client.end()
    assert.deepEqual(rows, [{ x: 42 }])
    const other = await server.query(
      "select count(*)::int as n from pg_tables where tablename = 't'",
      b.split('/').at(-1),
    )
    assert.equal(other.rows[0].n, 0)
    // CPU time of the whole server: it moves with work done in a backend, and counts a
    // backend that has exited (the postmaster's reaped-children time).
    const before = server.cpuSeconds()
    const busy = new pg.Client({ connectionString: a })
    await busy.connect()
    await busy.query('select count(*) from generate_series(1, 3000000)')
    await busy.end() // exited or not yet reaped, the backend's time is counted
    assert.ok(server.cpuSeconds() - before >= 0.05, `${server.cpuSeconds() - before} s`)
    await server.stop()
    await assert.rejects(roundTrip(server.port, 'x'), /ECONNREFUSED/)
  })
})

describe('startRedis', () => {
  test('answers PING and stops', async () => {
    const redis = await startRedis()
    assert.match(redis.url, /^redis:\/\/127\.0\.0\.1:\d+$/)
    assert.equal(await roundTrip(redis.port, 'PING\r\n'), '+PONG\r\n')
    await redis.stop()
    await assert.rejects(roundTrip(redis.port, 'PING\r\n'), /ECONNREFUSED/)
  })
})
