/**
 * httpLoad against a real node:http server: answers counted by status, latencies per
 * answer, connections the server closes reopened; processCpu reads a live process.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import { test } from 'node:test'
import { buildHttpRequest, httpLoad, processCpu } from '../src/index.ts'

test('buildHttpRequest writes the request line, host, headers and content-length', () => {
  const bytes = buildHttpRequest({
    method: 'POST',
    path: '/hooks/x?y=1',
    host: '127.0.0.1:9',
    headers: { 'content-type': 'application/json' },
    body: '{"text":"é"}',
  })
  assert.equal(
    bytes.toString('utf8'),
    'POST /hooks/x?y=1 HTTP/1.1\r\nhost: 127.0.0.1:9\r\ncontent-type: application/json\r\ncontent-length: 13\r\n\r\n{"text":"é"}',
  )
})

test('httpLoad counts ok answers and errors, keeps latencies, and reopens closed connections', async (t) => {
  let served = 0
  const bodies: string[] = []
  const server = createServer((req, res) => {
    served++
    let body = ''
    req.on('data', (c: Buffer) => {
      body += c.toString()
    })
    req.on('end', () => {
      bodies.push(body)
      // Every 10th answer closes the connection; /bad answers 500.
      if (served % 10 === 0) res.setHeader('connection', 'close')
      const answer = 'x'.repeat(served % 3000)
      res.writeHead(req.url === '/bad' ? 500 : 200, {
        'content-type': 'text/plain',
        'content-length': String(answer.length),
      })
      res.end(answer)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.after(() => server.close())
  const port = (server.address() as { port: number }).port
  const host = `127.0.0.1:${port}`
  // Short runs until 60 answers have crossed several of the server's closes: how many fit in
  // one run depends on the machine's load, which this test must not.
  let answers = 0
  for (let run = 0; run < 200 && answers < 60; run++) {
    const r = await httpLoad({
      host: '127.0.0.1',
      port,
      requests: [
        buildHttpRequest({ method: 'POST', path: '/ok', host, body: 'one' }),
        buildHttpRequest({ path: '/bad', host }),
      ],
      connections: 4,
      durationMs: 100,
    })
    answers += r.requests + r.errors
    // Requests alternate between /ok and /bad across all connections.
    assert.ok(Math.abs(r.requests - r.errors) <= 4 + r.errors / 10, `${r.requests} ok vs ${r.errors} errors`)
    assert.equal(r.latencies.length, r.requests + r.errors)
    assert.ok(r.latencies.every((ms) => Number.isFinite(ms) && ms >= 0))
    assert.ok(r.seconds >= 0.1 && r.rps === r.requests / r.seconds)
  }
  assert.ok(answers >= 60, `only ${answers} answers`)
  assert.ok(served >= answers)
  assert.ok(served >= 60, 'the server closed connections and the load reopened them')
  assert.ok(bodies.includes('one'))
})

test('processCpu reads the CPU time of a busy process', async (t) => {
  const child = spawn(process.execPath, ['-e', 'for (;;) {}'])
  t.after(() => child.kill())
  // The child spins until killed; on a loaded machine it may take seconds to get 50 ms of CPU.
  let cpu = processCpu(child.pid!, { children: true })
  for (let i = 0; i < 600 && cpu.user + cpu.system <= 0.05; i++) {
    await new Promise((r) => setTimeout(r, 50))
    cpu = processCpu(child.pid!, { children: true })
  }
  assert.ok(cpu.user + cpu.system > 0.05, `user ${cpu.user} system ${cpu.system}`)
  const later = processCpu(child.pid!, { children: true })
  assert.ok(later.user + later.system >= cpu.user + cpu.system, 'CPU time only grows')
})
