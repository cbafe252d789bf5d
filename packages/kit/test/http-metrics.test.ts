/**
 * The kit's tallied HTTP metrics against prom-client's own Counter and Histogram: the same
 * requests recorded into both must read the same in the exposition, line for line.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { HttpRequestMetrics } from '../src/http-metrics.ts'
import { createMetrics } from '../src/metrics.ts'

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const NAMES = ['testapp_http_requests_total', 'testapp_http_request_duration_seconds']

interface Request {
  method: string
  route: string
  status: number
  seconds: number
}

/** Both implementations fed the same requests; each one's exposition of the two metrics. */
async function expositions(requests: Request[], reset = false): Promise<[string, string]> {
  const ours = createMetrics('testapp')
  const tallied = new HttpRequestMetrics(ours, BUCKETS)
  const theirs = createMetrics('testapp')
  const counter = theirs.counter('http_requests_total', 'HTTP requests answered', ['method', 'route', 'status'])
  const histogram = theirs.histogram(
    'http_request_duration_seconds',
    'Time to answer HTTP requests',
    ['method', 'route'],
    BUCKETS,
  )
  for (const r of requests) {
    tallied.record(r.method, r.route, r.status, r.seconds)
    counter.inc({ method: r.method, route: r.route, status: r.status })
    histogram.observe({ method: r.method, route: r.route }, r.seconds)
  }
  if (reset) {
    ours.registry.resetMetrics()
    theirs.registry.resetMetrics()
  }
  const text = async (m: typeof ours) =>
    (await Promise.all(NAMES.map((n) => m.registry.getSingleMetricAsString(n)))).join('\n')
  return [await text(ours), await text(theirs)]
}

const request = fc.record({
  method: fc.constantFrom('GET', 'HEAD', 'POST'),
  route: fc.constantFrom('/t/:ticket/*', '/v1/items/:id', 'unmatched', '/a "quoted" \\ route'),
  status: fc.constantFrom(200, 304, 404, 500),
  // Bounds themselves, values between them, zero and values past the last bound.
  seconds: fc.oneof(fc.constantFrom(0, ...BUCKETS, 12.5), fc.double({ min: 0, max: 20, noNaN: true })),
})

describe('HttpRequestMetrics', () => {
  test('reads as prom-client Counter and Histogram fed the same requests', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(request, { maxLength: 60 }), async (requests) => {
        const [ours, theirs] = await expositions(requests)
        assert.equal(ours, theirs)
      }),
      { numRuns: 200 },
    )
  })

  test('a request on a bound counts in that bucket; one past the last bound only in +Inf', async () => {
    const [ours] = await expositions([
      { method: 'GET', route: '/r', status: 200, seconds: 0.005 },
      { method: 'GET', route: '/r', status: 200, seconds: 11 },
    ])
    assert.match(ours, /^testapp_http_request_duration_seconds_bucket\{le="0\.001",method="GET",route="\/r"\} 0$/m)
    assert.match(ours, /^testapp_http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/r"\} 1$/m)
    assert.match(ours, /^testapp_http_request_duration_seconds_bucket\{le="10",method="GET",route="\/r"\} 1$/m)
    assert.match(ours, /^testapp_http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/r"\} 2$/m)
    assert.match(ours, /^testapp_http_request_duration_seconds_count\{method="GET",route="\/r"\} 2$/m)
    assert.match(ours, /^testapp_http_requests_total\{method="GET",route="\/r",status="200"\} 2$/m)
  })

  test('resetting the registry forgets every series, as with prom-client', async () => {
    const requests = [{ method: 'GET', route: '/r', status: 200, seconds: 0.2 }]
    const [ours, theirs] = await expositions(requests, true)
    assert.equal(ours, theirs)
  })

  test('buckets must increase', () => {
    assert.throws(() => new HttpRequestMetrics(createMetrics('x'), [0.1, 0.1]), /increasing/)
    assert.throws(() => new HttpRequestMetrics(createMetrics('x'), [0.1, Number.POSITIVE_INFINITY]), /finite/)
  })
})
