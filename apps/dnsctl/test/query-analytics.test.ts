/**
 * Query analytics: kresd's real dnstap stream into dnsctl, a replayed stream for the privacy
 * modes, the bounds under 1M distinct names, the parameters' bad values, and fuzzing of the
 * three parsers of the stream (Frame Streams, dnstap protobuf, DNS response).
 */
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { dnsQuery, EMPTY_RPZ, type Kresd, startKresd, tempDir, waitFor } from '@gatehouse/testkit'
import dnsPacket from 'dns-packet'
import fc from 'fast-check'
import { DnstapError, decodeDnstap } from '../src/analytics/dnstap.ts'
import { CONTENT_TYPE, CONTROL, controlFrame, FrameDecoder, FrameStreamError } from '../src/analytics/framestream.ts'
import { summariseResponse } from '../src/analytics/response.ts'
import { AnalyticsService, RANKING_CAPACITY, RECENT_CAPACITY } from '../src/analytics/service.ts'
import { type Harness, json, startHarness } from './helpers.ts'

// --- a dnstap writer for replayed streams (protobuf by hand: varint keys, length-delimited) ---
function varint(n: number): Buffer {
  const out: number[] = []
  while (n >= 0x80) {
    out.push((n % 128) | 0x80)
    n = Math.floor(n / 128)
  }
  out.push(n)
  return Buffer.from(out)
}
const bytesField = (field: number, b: Uint8Array) => Buffer.concat([varint(field * 8 + 2), varint(b.length), b])
const intField = (field: number, n: number) => Buffer.concat([varint(field * 8), varint(n)])

function response(name: string, rcode: 'NOERROR' | 'NXDOMAIN', blocked = false): Buffer {
  return dnsPacket.encode({
    type: 'response',
    id: 1,
    flags: dnsPacket.RECURSION_DESIRED | (rcode === 'NXDOMAIN' ? 3 : 0),
    questions: [{ type: 'A', name, class: 'IN' }],
    authorities: blocked
      ? [
          {
            type: 'SOA',
            name,
            ttl: 10800,
            data: {
              mname: name,
              rname: 'nobody.invalid',
              serial: 1,
              refresh: 3600,
              retry: 1200,
              expire: 604800,
              minimum: 10800,
            },
          },
        ]
      : [],
  })
}

function dnstapFrame(client: number[], msg: Buffer, type = 6): Buffer {
  const message = Buffer.concat([
    intField(1, type),
    bytesField(4, Buffer.from(client)),
    intField(8, 1_800_000_000),
    bytesField(14, msg),
  ])
  return Buffer.concat([bytesField(14, message), intField(15, 1)])
}

function dataFrame(payload: Buffer): Buffer {
  const head = Buffer.alloc(4)
  head.writeUInt32BE(payload.length)
  return Buffer.concat([head, payload])
}

/** Replay frames into a dnstap socket as a Frame Streams writer; resolves after FINISH. */
async function replay(path: string, frames: Buffer[]): Promise<void> {
  const socket = connect(path)
  const decoder = new FrameDecoder()
  const seen: number[] = []
  const waitFor = async (type: number) => {
    const deadline = Date.now() + 10_000
    while (!seen.includes(type)) {
      if (Date.now() > deadline) throw new Error(`no control frame ${type}`)
      await delay(5)
    }
  }
  socket.on('data', (d) => {
    for (const ev of decoder.push(d)) if (ev.kind === 'control') seen.push(ev.type)
  })
  socket.write(controlFrame(CONTROL.READY, [CONTENT_TYPE]))
  await waitFor(CONTROL.ACCEPT)
  socket.write(controlFrame(CONTROL.START, [CONTENT_TYPE]))
  for (const f of frames) socket.write(dataFrame(f))
  socket.write(controlFrame(CONTROL.STOP))
  await waitFor(CONTROL.FINISH)
  socket.destroy()
}

describe('query analytics from a real kresd dnstap stream (detailed mode)', () => {
  let h: Harness
  let kresd: Kresd
  const dir = tempDir('dnsctl-dnstap-')
  const socketPath = join(dir.path, 'dnstap.sock')
  before(async () => {
    h = await startHarness({ env: { DNSCTL_DNSTAP_SOCKET: socketPath, DNSCTL_ANALYTICS_PRIVACY: 'detailed' } })
    kresd = await startKresd({
      rpz: `${EMPTY_RPZ}ads.example. CNAME .\n`,
      extraConfig: `modules.load('dnstap')\ndnstap.config({ socket_path = '${socketPath}', client = { log_responses = true } })\n`,
    })
  })
  after(async () => {
    await kresd?.stop()
    await h?.close()
    dir.remove()
  })

  test('totals, blocked share, rankings and the newest queries', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await dnsQuery(kresd.port, 'ads.example', 'A')).rcode, 'NXDOMAIN')
    await dnsQuery(kresd.port, 'other.test', 'AAAA')
    const body = await waitFor('analytics', async () => {
      const b = await json(await h.call('GET', '/v1/query-analytics?range=1h&limit=5&recent=10'))
      const items: Array<{ domain: string; count: number }> = b.domains.items
      const seen =
        items.some((d) => d.domain === 'ads.example' && d.count === 3) && items.some((d) => d.domain === 'other.test')
      assert.ok(seen, JSON.stringify(items))
      return b
    })
    assert.equal(body.privacy_mode, 'detailed')
    assert.ok(body.totals.blocked >= 3)
    assert.ok(body.blocked_percent > 0 && body.blocked_percent <= 100)
    assert.deepEqual(body.clients.items[0].client, '127.0.0.1')
    assert.ok(body.query_types.items.some((t: { type: string }) => t.type === 'AAAA'))
    const ads = body.recent_queries.find((q: { name: string }) => q.name === 'ads.example')
    assert.deepEqual(
      { ...ads, time: undefined },
      { time: undefined, client: '127.0.0.1', name: 'ads.example', type: 'A', rcode: 'NXDOMAIN', blocked: true },
    )
    assert.equal(body.recent_queries[0].name, 'other.test') // newest first
  })

  test('every parameter refuses its bad values with 400 invalid_request', async () => {
    const bad = [
      '',
      '?range=',
      '?range=30m',
      '?range=7D',
      '?range=1h&limit=0',
      '?range=1h&limit=101',
      '?range=1h&limit=1.5',
      '?range=1h&limit=ten',
      '?range=1h&limit=-1',
      '?range=1h&recent=-1',
      '?range=1h&recent=1001',
      '?range=1h&recent=x',
      '?range=1h&client=127.0.0.1',
      '?range=1h&metric=up',
    ]
    for (const q of bad) {
      const res = await h.call('GET', `/v1/query-analytics${q}`)
      assert.equal(res.status, 400, q)
      assert.equal((await json(res)).error.code, 'invalid_request', q)
    }
    for (const q of ['?range=7d', '?range=24h&limit=1&recent=0', '?range=6h&limit=100&recent=1000']) {
      assert.equal((await h.call('GET', `/v1/query-analytics${q}`)).status, 200, q)
    }
  })
})

describe('privacy modes with a replayed stream', () => {
  for (const mode of ['off', 'aggregate', 'detailed'] as const) {
    test(mode, async () => {
      const dir = tempDir('dnsctl-dnstap-')
      const socketPath = join(dir.path, 'dnstap.sock')
      const h = await startHarness({
        env: { DNSCTL_DNSTAP_SOCKET: socketPath, ...(mode === 'aggregate' ? {} : { DNSCTL_ANALYTICS_PRIVACY: mode }) },
      })
      try {
        const frames = [
          dnstapFrame([192, 0, 2, 77], response('a.example', 'NOERROR')),
          dnstapFrame([192, 0, 2, 78], response('blocked.example', 'NXDOMAIN', true)),
          dnstapFrame([0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9], response('a.example', 'NXDOMAIN')),
          dnstapFrame([192, 0, 2, 77], response('q.example', 'NOERROR'), 5), // a query, not a response: skipped
          Buffer.from([0xff, 0xff, 0xff]), // not protobuf: skipped
        ]
        await replay(socketPath, frames)
        const body = await json(await h.call('GET', '/v1/query-analytics?range=24h&recent=10'))
        assert.equal(body.privacy_mode, mode)
        if (mode === 'off') {
          assert.deepEqual(body.totals, { queries: 0, blocked: 0 })
          assert.deepEqual(body.clients.items, [])
          assert.equal(body.recent_queries, undefined)
          return
        }
        assert.deepEqual(body.totals, { queries: 3, blocked: 1 })
        assert.ok(Math.abs(body.blocked_percent - 100 / 3) < 1e-9)
        assert.deepEqual(body.domains.items, [
          { domain: 'a.example', count: 2 },
          { domain: 'blocked.example', count: 1 },
        ])
        const clients = body.clients.items.map((c: { client: string }) => c.client).sort()
        if (mode === 'aggregate') {
          assert.deepEqual(clients, ['192.0.2.0/24', '2001:db8:1::/48'])
          assert.equal(body.recent_queries, undefined)
          // No full address anywhere in the answer.
          assert.ok(!JSON.stringify(body).includes('192.0.2.77'))
        } else {
          assert.deepEqual(clients, ['192.0.2.77', '192.0.2.78', '2001:db8:1:0:0:0:0:9'])
          assert.equal(body.recent_queries.length, 3)
          assert.equal(body.recent_queries[1].blocked, true)
        }
      } finally {
        await h.close()
        dir.remove()
      }
    })
  }
})

describe('bounds', () => {
  test('1M distinct names from 1M clients: memory stays bounded, the heavy hitter stays on top', () => {
    const clock = Date.parse('2026-11-01T00:00:00Z')
    let now = clock
    const service = new AnalyticsService('detailed', () => new Date(now))
    const hot = {
      type: 6,
      queryAddress: new Uint8Array([10, 0, 0, 1]),
      queryTimeSec: 0,
      responseMessage: response('hot.example', 'NOERROR'),
    }
    for (let i = 0; i < 1_000_000; i++) {
      now = clock + i * 10 // 10,000 s: several buckets
      const name = `r${i.toString(36)}.flood.example`
      service.ingest({
        type: 6,
        queryAddress: new Uint8Array([i >> 24, (i >> 16) & 255, (i >> 8) & 255, i & 255]),
        queryTimeSec: 0,
        responseMessage: response(name, 'NXDOMAIN'),
      })
      if (i % 50 === 0) service.ingest(hot)
    }
    // Per bucket at most 2 x capacity keys per ranking, plus the recent ring.
    const buckets = Math.ceil(10_000 / 300) + 1 + Math.ceil(10_000 / 3600) + 1
    assert.ok(service.heldKeys() <= buckets * 3 * 2 * RANKING_CAPACITY + RECENT_CAPACITY, String(service.heldKeys()))
    const body = service.snapshot('24h', 3, 5)
    assert.equal(body.totals.queries, 1_000_000 + 20_000)
    assert.equal(body.domains.items[0]!.domain, 'hot.example')
    assert.equal(body.domains.truncated, true)
    assert.equal(body.recent_queries!.length, 5)
  })
})

describe('stream parsers (fast-check)', () => {
  test('FrameDecoder: random bytes give frames or a FrameStreamError, never anything else', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        try {
          new FrameDecoder(4096).push(Buffer.from(bytes))
        } catch (err) {
          assert.ok(err instanceof FrameStreamError, String(err))
        }
      }),
      { numRuns: 2000 },
    )
  })

  test('FrameDecoder: any split of a valid stream yields the same frames', () => {
    const stream = Buffer.concat([
      controlFrame(CONTROL.READY, [CONTENT_TYPE]),
      controlFrame(CONTROL.START, [CONTENT_TYPE]),
      dataFrame(Buffer.from('one')),
      dataFrame(Buffer.from('two frames')),
      controlFrame(CONTROL.STOP),
    ])
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 10 }), (cuts) => {
        const decoder = new FrameDecoder()
        const events = []
        let last = 0
        for (const c of [...cuts.sort((a, b) => a - b), stream.length]) {
          events.push(...decoder.push(Buffer.from(stream.subarray(last, c))))
          last = c
        }
        assert.deepEqual(
          events.map((e) => (e.kind === 'data' ? e.payload.toString() : e.type)),
          [CONTROL.READY, CONTROL.START, 'one', 'two frames', CONTROL.STOP],
        )
      }),
    )
  })

  test('oversized frames are refused before they are buffered', () => {
    const head = Buffer.alloc(4)
    head.writeUInt32BE(5000)
    assert.throws(() => new FrameDecoder(4096).push(head), FrameStreamError)
    assert.throws(() => new FrameDecoder().push(Buffer.from([0, 0, 0, 0, 0, 0, 4, 0])), FrameStreamError)
  })

  test('decodeDnstap and summariseResponse: random and truncated input never crash', () => {
    const valid = dnstapFrame([192, 0, 2, 1], response('a.example', 'NOERROR'))
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc.integer({ min: 0, max: valid.length }).map((n) => valid.subarray(0, n)),
        ),
        (bytes) => {
          try {
            const m = decodeDnstap(bytes)
            if (m?.responseMessage) summariseResponse(m.responseMessage)
          } catch (err) {
            assert.ok(err instanceof DnstapError, String(err))
          }
          const r = summariseResponse(bytes)
          if (r) assert.ok(r.name.length <= 255)
        },
      ),
      { numRuns: 3000 },
    )
    const m = decodeDnstap(valid)!
    assert.deepEqual(summariseResponse(m.responseMessage!), { name: 'a.example', type: 1, rcode: 0, blocked: false })
  })
})
