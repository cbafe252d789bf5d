import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createMetrics } from '../src/index.ts'

describe('createMetrics', () => {
  test('prefixes the app metrics with the app name; the standard collectors keep their names', async () => {
    const m = createMetrics('dnsctl', '1.2.3')
    assert.equal(m.prefix, 'dnsctl_')
    const c = m.counter('zones_published_total', 'Zones published', ['result'])
    c.inc({ result: 'ok' })
    c.inc({ result: 'ok' })
    m.gauge('queue_depth', 'Queued jobs').set(3)
    m.histogram('publish_seconds', 'Publish time', [], [0.1, 1]).observe(0.5)
    const text = await m.registry.metrics()
    assert.match(text, /^dnsctl_zones_published_total\{result="ok"\} 2$/m)
    assert.match(text, /^dnsctl_queue_depth 3$/m)
    assert.match(text, /^dnsctl_publish_seconds_bucket\{le="1"\} 1$/m)
    assert.match(text, /^dnsctl_build_info\{version="1\.2\.3",node="v\d+\.\d+\.\d+"\} 1$/m)
    // The names every Node.js dashboard and alert expects (prom-client's defaults, unprefixed).
    assert.match(text, /^process_resident_memory_bytes /m)
    assert.match(text, /^process_cpu_seconds_total /m)
    assert.match(text, /^nodejs_heap_size_used_bytes /m)
    assert.doesNotMatch(text, /^dnsctl_(process|nodejs)_/m)
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('#')) continue
      assert.match(line, /^(dnsctl_|process_|nodejs_)/, line)
    }
  })

  test('registries are independent', async () => {
    const a = createMetrics('app_a')
    const b = createMetrics('app_b')
    a.counter('x_total', 'x').inc()
    assert.doesNotMatch(await b.registry.metrics(), /app_a_/)
  })

  test('a prefix that is not snake_case is a TypeError', () => {
    assert.throws(() => createMetrics('Bad-Name'), TypeError)
    assert.throws(() => createMetrics('9x'), TypeError)
  })
})
