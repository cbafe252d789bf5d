import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { type Prometheus, startPrometheus } from '../src/index.ts'

describe('startPrometheus', () => {
  let prom: Prometheus
  let value = 1
  const target = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
    res.end(`# TYPE demo_total counter\ndemo_total ${value}\n`)
  })
  before(async () => {
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r))
    prom = await startPrometheus({ targets: [`127.0.0.1:${(target.address() as AddressInfo).port}`], job: 'demo' })
  })
  after(async () => {
    await prom?.stop()
    await new Promise<void>((r) => target.close(() => r()))
  })

  test('scrapes its target; waitForScrape waits for what the target exposes now', async () => {
    await prom.waitForScrape()
    value = 42
    await prom.waitForScrape()
    const [sample] = await prom.query('demo_total{job="demo"}')
    assert.equal(sample?.value[1], '42')
    await assert.rejects(prom.query('demo_total{'), /prometheus query demo_total\{ failed: /)
  })
})
