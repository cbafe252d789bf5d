import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { describe, test } from 'node:test'
import { createLogger, fixedFieldLogger, requestIdFrom } from '../src/index.ts'

/** A logger writing into a stream, and a way to read back the parsed lines. */
function capture(level?: 'info' | 'debug' | 'warn') {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8')
  })
  const log = createLogger({ name: 'testapp', destination: stream, ...(level ? { level } : {}) })
  const lines = async () => {
    // pino writes synchronously to a plain stream; end it and wait for the last chunk.
    stream.end()
    await once(stream, 'end')
    return text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
  }
  return { log, lines }
}

describe('createLogger', () => {
  test('writes JSON lines with app, level label and RFC 3339 UTC time', async () => {
    const { log, lines } = capture()
    log.info({ zone: 'a.test' }, 'zone published')
    log.warn('careful')
    const [first, second] = await lines()
    assert.ok(first && second)
    assert.equal(first.app, 'testapp')
    assert.equal(first.level, 'info')
    assert.equal(first.msg, 'zone published')
    assert.equal(first.zone, 'a.test')
    assert.match(String(first.time), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    assert.equal(new Date(String(first.time)).toISOString(), first.time)
    assert.equal(second.level, 'warn')
  })

  test('respects the level', async () => {
    const { log, lines } = capture('warn')
    log.info('hidden')
    log.error('shown')
    const out = await lines()
    assert.deepEqual(
      out.map((l) => l.msg),
      ['shown'],
    )
  })

  test('redacts tokens, passwords and authorization', async () => {
    const { log, lines } = capture()
    log.info(
      {
        token: 'tok-SECRET1',
        password: 'pw-SECRET2',
        authorization: 'Bearer SECRET3',
        user: { password: 'pw-SECRET4', name: 'ann' },
        req: { headers: { authorization: 'Bearer SECRET5', cookie: 'sid=SECRET6', host: 'x' } },
        secret: 'SECRET7',
      },
      'login',
    )
    const text = JSON.stringify(await lines())
    assert.doesNotMatch(text, /SECRET\d/)
    assert.match(text, /\[redacted\]/)
    assert.match(text, /"name":"ann"/)
    assert.match(text, /"host":"x"/)
  })

  test('errors under err and cause keep their message and stack', async () => {
    const { log, lines } = capture()
    const cause = new Error('disk full')
    log.info({ cause, err: new Error('outer', { cause }) }, 'refused')
    const [line] = await lines()
    const c = line?.cause as { type: string; message: string; stack: string }
    assert.equal(c.type, 'Error')
    assert.equal(c.message, 'disk full')
    assert.match(c.stack, /disk full/)
    assert.match(JSON.stringify(line?.err), /outer/)
  })

  test('child loggers keep the app field', async () => {
    const { log, lines } = capture()
    log.child({ request_id: 'r1' }).info('inside')
    const [line] = await lines()
    assert.equal(line?.app, 'testapp')
    assert.equal(line?.request_id, 'r1')
  })
})

describe('standard output', () => {
  test('a reader that stops reading: lines past the bound are dropped, counted and reported once output flows', async () => {
    const lines = 20_000
    const child = spawn(process.execPath, [join(import.meta.dirname, 'fixtures', 'log-flood.ts'), String(lines)], {
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stderr = ''
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString()
    })
    // Nothing reads its stdout until it has logged every line.
    while (!stderr.includes('written')) await once(child.stderr, 'data')
    let out = ''
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString()
    })
    child.stdin.end()
    const [code] = await once(child, 'close')
    assert.equal(code, 0, stderr)
    const parsed = out
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { msg: string; i?: number; dropped?: number })
    const logged = parsed.filter((l) => l.msg === 'line')
    const report = parsed.at(-1)!
    assert.equal(report.msg, 'log lines dropped: standard output was not read fast enough')
    // Whole lines, the first ones in order; every line either written or counted.
    assert.deepEqual(
      logged.map((l) => l.i),
      logged.map((_, i) => i),
    )
    assert.equal(logged.length + report.dropped!, lines)
    // What waited: the bound (256 KiB) and what the pipe held; 20,000 lines are ~5 MiB.
    assert.ok(logged.length * 250 < 512 * 1024, `${logged.length} lines written`)
  })
})

describe('requestIdFrom', () => {
  test('reuses a sane id and replaces others', () => {
    assert.equal(requestIdFrom('abc-123.x:y_z'), 'abc-123.x:y_z')
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
    assert.match(requestIdFrom(undefined), uuid)
    assert.match(requestIdFrom('has space'), uuid)
    assert.match(requestIdFrom('x'.repeat(129)), uuid)
    assert.match(requestIdFrom(['a', 'b']), uuid)
    assert.match(requestIdFrom('<script>'), uuid)
  })
})

describe('fixedFieldLogger', () => {
  test('one child per logger, same app and level, without the redaction pass; the parent keeps it', async () => {
    const { log, lines } = capture('info')
    const fixed = fixedFieldLogger(log)
    assert.equal(fixedFieldLogger(log), fixed)
    fixed.info({ route: 'ssh', token: 'not-a-secret-here' }, 'rejected unknown client')
    fixed.debug({ route: 'ssh' }, 'below the level')
    log.info({ token: 'hunter2' }, 'from the parent')
    const [a, b, ...rest] = await lines()
    assert.equal(rest.length, 0)
    assert.equal(a?.app, 'testapp')
    assert.equal(a?.level, 'info')
    assert.equal(a?.token, 'not-a-secret-here')
    assert.equal(b?.token, '[redacted]')
  })
})
