/**
 * The ClientHello reader as a parser of outside input: fragmented (one byte per segment, many
 * records), truncated, oversized, corrupted and non-TLS bytes. Never a crash, never a hang,
 * always `more`, `done` or a coded error; fast-check seeded with real hellos.
 */
import assert from 'node:assert/strict'
import { before, test } from 'node:test'
import fc from 'fast-check'
import { HelloError, HelloReader, type HelloState, readClientHello } from '../src/wire/client-hello.ts'
import { MAX_HELLO, MAX_HELLO_RECORDS } from '../src/wire/constants.ts'
import { computeFingerprints } from '../src/wire/fingerprints.ts'
import { proxyV2Header } from '../src/wire/proxy-protocol.ts'
import { opensslHello } from './capture.ts'
import { buildHello, CHROME_143, helloMessage, records } from './hello-builder.ts'

let real: Buffer
before(async () => {
  real = await opensslHello()
})

test('a hello split into 1-byte records and fed one byte at a time gives the same fingerprint', () => {
  const whole = readClientHello(buildHello(CHROME_143))
  assert.equal(whole.kind, 'done')
  const split = records(helloMessage(CHROME_143), 1)
  let state = readClientHello(split.subarray(0, 1))
  for (let n = 1; state.kind === 'more'; n++) {
    assert.ok(state.need > n - 1, 'need grows')
    state = readClientHello(split.subarray(0, n))
  }
  assert.equal(state.kind, 'done')
  if (state.kind !== 'done' || whole.kind !== 'done') return
  assert.equal(state.consumed, split.length)
  assert.equal(computeFingerprints(state.hello).ja4, computeFingerprints(whole.hello).ja4)
})

test('the incremental reader fed a growing buffer agrees with a fresh read at every step', () => {
  const split = records(helloMessage(CHROME_143), 7)
  const reader = new HelloReader()
  let last: HelloState | undefined
  for (let n = 0; n <= split.length; n++) {
    const prefix = split.subarray(0, n)
    const incremental = reader.read(Buffer.from(prefix)) // a new buffer each time, as readFirstBytes concatenates
    const fresh = readClientHello(prefix)
    assert.equal(incremental.kind, fresh.kind, `prefix ${n}`)
    if (incremental.kind === 'more' && fresh.kind === 'more') assert.equal(incremental.need, fresh.need)
    last = incremental
    if (incremental.kind !== 'more') break
  }
  assert.equal(last?.kind, 'done')
  if (last?.kind !== 'done') return
  assert.equal(computeFingerprints(last.hello).ja4, 't13d1516h2_8daaf6152771_d8a2da3f94cd')
})

test(`a hello spread over ${MAX_HELLO_RECORDS} records is read; one more record is refused (too_many_records)`, () => {
  // Chrome's hello grown to the size of a real post-quantum one (about 1.8 KB) with empty extensions.
  const message = helloMessage({
    ...CHROME_143,
    extensions: [...CHROME_143.extensions, ...Array.from({ length: 380 }, (_, i) => 0x7000 + i)],
  })
  const size = Math.ceil(message.length / MAX_HELLO_RECORDS)
  const most = records(message, size)
  assert.ok(most.length / (size + 5) <= MAX_HELLO_RECORDS)
  assert.equal(readClientHello(most).kind, 'done')
  // The same hello with 1-byte records: refused at the 513th record header, before its body.
  const tiny = records(message, 1)
  assert.ok(message.length > MAX_HELLO_RECORDS)
  const state = readClientHello(tiny.subarray(0, (MAX_HELLO_RECORDS + 1) * 6))
  assert.equal(state.kind === 'error' && state.error.code, 'too_many_records')
})

test('every prefix of a real hello asks for more; trailing bytes are not consumed', () => {
  for (let n = 0; n < real.length; n++) assert.equal(readClientHello(real.subarray(0, n)).kind, 'more', `prefix ${n}`)
  const withData = Buffer.concat([real, Buffer.from('early data')])
  const state = readClientHello(withData)
  assert.equal(state.kind === 'done' && state.consumed, real.length)
})

test('refusals carry stable codes', () => {
  const code = (b: Buffer) => {
    const s = readClientHello(b)
    return s.kind === 'error' ? s.error.code : s.kind
  }
  assert.equal(code(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')), 'not_tls')
  assert.equal(code(Buffer.from('SSH-2.0-OpenSSH_9.2\r\n')), 'not_tls')
  assert.equal(code(Buffer.from([0x16, 0x02, 0x00, 0x00, 0x10])), 'not_tls')
  assert.equal(code(Buffer.from([0x16, 0x03, 0x01, 0x40, 0x01])), 'record_invalid') // 16385-byte record
  assert.equal(code(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x00])), 'record_invalid')
  // A ServerHello (type 2) where a ClientHello belongs.
  assert.equal(code(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x04, 0x02, 0x00, 0x00, 0x00])), 'not_client_hello')
  // A hello announcing more than the cap is refused before its body is buffered.
  const big = MAX_HELLO + 1
  assert.equal(
    code(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x04, 0x01, big >> 16, (big >> 8) & 0xff, big & 0xff])),
    'hello_too_large',
  )
  // An alert record in the middle of a split hello.
  const split = records(helloMessage(CHROME_143), 100)
  const alert = Buffer.from([0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28])
  assert.equal(code(Buffer.concat([split.subarray(0, 105), alert])), 'record_invalid')
  // Lengths that run past their block.
  const body = helloMessage({ ciphers: [0x1301], extensions: [0x000a], groups: [29] }) // ... 00 0a 00 04 00 02 00 1d
  body[body.length - 3] = 0xff // the supported_groups list length, now past its extension
  assert.equal(code(records(body)), 'extension_malformed')
})

test('fuzz: arbitrary bytes, and real hellos corrupted or cut, never throw', () => {
  const seeds = [real, buildHello(CHROME_143), records(helloMessage(CHROME_143), 7)]
  const corrupted = fc
    .tuple(
      fc.constantFrom(...seeds),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
      fc.nat(),
    )
    .map(([seed, flips, cut]) => {
      const b = Buffer.from(seed)
      for (const [at, v] of flips) b[at % b.length] = v
      return b.subarray(0, cut % (b.length + 1))
    })
  fc.assert(
    fc.property(
      fc.oneof(
        fc.uint8Array({ maxLength: 4096 }).map((a) => Buffer.from(a)),
        corrupted,
      ),
      (bytes) => {
        const s = readClientHello(bytes)
        if (s.kind === 'error') assert.ok(s.error instanceof HelloError)
        if (s.kind === 'more') assert.ok(s.need > bytes.length && s.need <= bytes.length + MAX_HELLO + 5 * 1024)
        if (s.kind === 'done') {
          assert.ok(s.consumed <= bytes.length)
          assert.match(computeFingerprints(s.hello).ja4, /^t..[di]\d{4}.._[0-9a-f]{12}_[0-9a-f]{12}$/)
        }
      },
    ),
    { numRuns: 3000 },
  )
})

test('PROXY v2 header layout: IPv4 block, and IPv6 when either side is IPv6', () => {
  const v4 = proxyV2Header({ ip: '203.0.113.7', port: 51000 }, { ip: '192.0.2.1', port: 443 })
  assert.equal(v4.subarray(0, 12).toString('latin1'), '\r\n\r\n\0\r\nQUIT\n')
  assert.deepEqual([...v4.subarray(12, 16)], [0x21, 0x11, 0x00, 12])
  assert.deepEqual([...v4.subarray(16, 24)], [203, 0, 113, 7, 192, 0, 2, 1])
  assert.equal(v4.readUInt16BE(24), 51000)
  assert.equal(v4.readUInt16BE(26), 443)
  const v6 = proxyV2Header({ ip: '2001:db8::1', port: 1 }, { ip: '192.0.2.1', port: 443 })
  assert.deepEqual([...v6.subarray(12, 16)], [0x21, 0x21, 0x00, 36])
  assert.deepEqual([...v6.subarray(32, 48)], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1])
})
