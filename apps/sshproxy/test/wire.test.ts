/**
 * The pre-encryption parser: real client hellos captured from OpenSSH and Dropbear, the
 * reference fingerprints, RFC 4253 rules, and fast-check properties (arbitrary bytes,
 * truncations, oversized lengths, arbitrary fragmentation): never a throw, never a hang,
 * always a clear error code.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { before, describe, test } from 'node:test'
import fc from 'fast-check'
import { KEXINIT_NAME_LISTS, MAX_INITIAL_PACKET } from '../src/wire/constants.ts'
import { fingerprintMaterial, fingerprintOf } from '../src/wire/fingerprint.ts'
import { type HandshakeState, readClientHandshake } from '../src/wire/handshake.ts'
import type { KexInit } from '../src/wire/kexinit.ts'
import { captureClientHello, DROPBEAR_FP, OPENSSH_FP, kexInitPacket as packet } from './helpers.ts'

let openssh: Buffer
let dropbear: Buffer
before(async () => {
  ;[openssh, dropbear] = await Promise.all([captureClientHello('openssh'), captureClientHello('dropbear')])
})

/** Feed chunks the way the gate does: append, parse, stop at the first final state. */
function feed(chunks: Buffer[]): HandshakeState {
  let buf = Buffer.alloc(0)
  let state: HandshakeState = { kind: 'more', need: 1 }
  for (const c of chunks) {
    buf = Buffer.concat([buf, c])
    if (state.kind === 'more' && buf.length < state.need) continue
    state = readClientHandshake(buf)
    if (state.kind !== 'more') return state
  }
  return state
}

function cut(buf: Buffer, points: number[]): Buffer[] {
  const sorted = [...new Set(points.map((p) => p % (buf.length + 1)))].sort((a, b) => a - b)
  const out: Buffer[] = []
  let at = 0
  for (const p of [...sorted, buf.length]) {
    out.push(buf.subarray(at, p))
    at = p
  }
  return out
}

const name = fc.stringMatching(/^[a-z0-9][a-z0-9@.+_-]{0,30}$/)
const nameList = fc.array(name, { maxLength: 12 }).map((a) => a.join(','))
const kexInit: fc.Arbitrary<KexInit> = fc.record({
  ...(Object.fromEntries(KEXINIT_NAME_LISTS.map((n) => [n, nameList])) as Record<
    (typeof KEXINIT_NAME_LISTS)[number],
    fc.Arbitrary<string>
  >),
  first_kex_packet_follows: fc.boolean(),
})

describe('real clients', () => {
  test('OpenSSH 9.2 with an empty known_hosts has the reference fingerprint', () => {
    const s = readClientHandshake(openssh)
    assert.equal(s.kind, 'done')
    if (s.kind !== 'done') return
    assert.equal(s.fingerprint, OPENSSH_FP)
    assert.match(s.identification.line, /^SSH-2\.0-OpenSSH_9\.2p1/)
    assert.equal(s.identification.softwareVersion, 'OpenSSH_9.2p1')
    assert.equal(s.kexinit.first_kex_packet_follows, false)
    assert.equal(s.consumed, openssh.length)
  })

  test('Dropbear 2022.83 has the reference fingerprint and its guessed packet is left after the KEXINIT', () => {
    const s = readClientHandshake(dropbear)
    assert.equal(s.kind, 'done')
    if (s.kind !== 'done') return
    assert.equal(s.fingerprint, DROPBEAR_FP)
    assert.equal(s.kexinit.first_kex_packet_follows, true)
    assert.ok(s.consumed < dropbear.length, 'bytes follow the KEXINIT')
  })

  test('the fingerprint is the first 16 bytes of SHA-256 over the nine values joined with ";"', () => {
    const s = readClientHandshake(openssh)
    if (s.kind !== 'done') throw new Error('expected done')
    const material = fingerprintMaterial(s.kexinit)
    assert.equal(material.split(';').length, 9)
    assert.equal(createHash('sha256').update(material).digest('hex').slice(0, 32), s.fingerprint)
  })
})

describe('RFC 4253 rules', () => {
  const ident = (line: string) => readClientHandshake(Buffer.from(line))
  const code = (s: HandshakeState) => (s.kind === 'error' ? s.error.code : s.kind)

  test('identification line', () => {
    assert.equal(code(ident(`SSH-2.0-${'x'.repeat(260)}\r\n`)), 'identification_too_long')
    assert.equal(code(ident(`SSH-2.0-${'x'.repeat(300)}`)), 'identification_too_long')
    assert.equal(code(ident('SSH-1.5-old\r\n')), 'protocol_version_unsupported')
    assert.equal(code(ident('HELLO\r\n')), 'identification_invalid')
    assert.equal(code(ident('SSH-2.0-a\tb\r\n')), 'identification_invalid')
    assert.equal(code(ident('SSH-2.0-\r\n')), 'identification_invalid')
    assert.equal(code(ident('SSH-2.0-x\rx\n')), 'identification_invalid')
    // 255 bytes including CR LF is the longest valid line; JSch puts "-" in its version.
    assert.equal(code(ident(`SSH-2.0-${'v'.repeat(245)}\r\n`)), 'more')
    assert.equal(code(ident('SSH-2.0-JSCH-0.1.54\r\n')), 'more')
    assert.equal(code(ident('SSH-2.0-OpenSSH_9.2p1\n')), 'more')
  })

  test('packet framing', () => {
    const good = packet(fc.sample(kexInit, { numRuns: 1, seed: 1 })[0]!)
    const withIdent = (p: Buffer) => readClientHandshake(Buffer.concat([Buffer.from('SSH-2.0-t\r\n'), p]))
    assert.equal(withIdent(good).kind, 'done')
    const odd = Buffer.from(good)
    odd.writeUInt32BE(odd.readUInt32BE(0) + 1)
    assert.equal(code(withIdent(odd)), 'packet_length_invalid')
    const lowPad = Buffer.from(good)
    lowPad[4] = 3
    assert.equal(code(withIdent(lowPad)), 'padding_invalid')
    const notKex = Buffer.from(good)
    notKex[5] = 21
    assert.equal(code(withIdent(notKex)), 'not_kexinit')
    const big = Buffer.alloc(8)
    big.writeUInt32BE(MAX_INITIAL_PACKET - 3)
    assert.equal(code(withIdent(big)), 'packet_too_large')
  })

  test('name-lists must be printable ASCII without empty names', () => {
    const base = fc.sample(kexInit, { numRuns: 1, seed: 2 })[0]!
    const withIdent = (k: KexInit) => readClientHandshake(Buffer.concat([Buffer.from('SSH-2.0-t\r\n'), packet(k)]))
    assert.equal(code(withIdent({ ...base, kex_algorithms: 'a,,b' })), 'name_list_invalid')
    assert.equal(code(withIdent({ ...base, kex_algorithms: 'a,' })), 'name_list_invalid')
    assert.equal(code(withIdent({ ...base, kex_algorithms: 'a b' })), 'name_list_invalid')
    assert.equal(code(withIdent({ ...base, kex_algorithms: 'caf\u00e9' })), 'name_list_invalid')
  })
})

describe('properties', () => {
  test('arbitrary bytes never throw and end in more, done or a coded error', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4096 }), (bytes) => {
        const s = readClientHandshake(bytes)
        assert.ok(['more', 'done', 'error'].includes(s.kind))
        if (s.kind === 'more') assert.ok(s.need > bytes.length)
        if (s.kind === 'error') assert.match(s.error.code, /^[a-z_]+$/)
      }),
      { numRuns: 2000 },
    )
  })

  test('bytes after a valid identification never throw', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40_000 }), (bytes) => {
        const s = readClientHandshake(Buffer.concat([Buffer.from('SSH-2.0-fuzz\r\n'), bytes]))
        assert.ok(['more', 'done', 'error'].includes(s.kind))
      }),
      { numRuns: 500 },
    )
  })

  test('every truncation of a real hello asks for more bytes', () => {
    for (const hello of [openssh, dropbear]) {
      const done = readClientHandshake(hello)
      if (done.kind !== 'done') throw new Error('expected done')
      for (let n = 0; n < done.consumed; n++) {
        const s = readClientHandshake(hello.subarray(0, n))
        assert.equal(s.kind, 'more', `prefix of ${n} bytes`)
        if (s.kind === 'more') assert.ok(s.need > n && s.need <= done.consumed)
      }
    }
  })

  test('any fragmentation of a real hello gives the same fingerprint and length', () => {
    fc.assert(
      fc.property(fc.constantFrom('openssh', 'dropbear'), fc.array(fc.nat(), { maxLength: 64 }), (which, points) => {
        const hello = which === 'openssh' ? openssh : dropbear
        const s = feed(cut(hello, points))
        assert.equal(s.kind, 'done')
        if (s.kind !== 'done') return
        assert.equal(s.fingerprint, which === 'openssh' ? OPENSSH_FP : DROPBEAR_FP)
      }),
      { numRuns: 500 },
    )
  })

  test('oversized packet and name-list lengths are refused before reading', () => {
    const identLen = openssh.indexOf(0x0a) + 1
    fc.assert(
      fc.property(fc.integer({ min: MAX_INITIAL_PACKET - 3, max: 0xffffffff }), (length) => {
        const b = Buffer.from(openssh)
        b.writeUInt32BE(length, identLen)
        const s = readClientHandshake(b)
        assert.equal(s.kind, 'error')
        if (s.kind === 'error') assert.equal(s.error.code, 'packet_too_large')
      }),
    )
    // The first name-list length sits after length(4), padding(1), message(1), cookie(16).
    const listAt = identLen + 4 + 1 + 1 + 16
    fc.assert(
      fc.property(fc.integer({ min: 2000, max: 0xffffffff }), (length) => {
        const b = Buffer.from(openssh)
        b.writeUInt32BE(length, listAt)
        const s = readClientHandshake(b)
        assert.equal(s.kind, 'error')
        if (s.kind === 'error') assert.equal(s.error.code, 'kexinit_malformed')
      }),
    )
  })

  test('random corruption of a real hello never throws', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('openssh', 'dropbear'),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 8 }),
        (which, edits) => {
          const b = Buffer.from(which === 'openssh' ? openssh : dropbear)
          for (const [at, v] of edits) b[at % b.length] = v
          const s = readClientHandshake(b)
          if (s.kind === 'done') assert.ok(s.consumed <= b.length)
        },
      ),
      { numRuns: 2000 },
    )
  })

  test('generated valid KEXINITs round-trip and hash their material', () => {
    fc.assert(
      fc.property(kexInit, fc.integer({ min: 4, max: 40 }), (kex, padding) => {
        const s = readClientHandshake(Buffer.concat([Buffer.from('SSH-2.0-gen\r\n'), packet(kex, padding)]))
        assert.equal(s.kind, 'done')
        if (s.kind !== 'done') return
        assert.deepEqual({ ...s.kexinit }, { ...kex })
        assert.equal(s.fingerprint, fingerprintOf(kex))
      }),
      { numRuns: 300 },
    )
  })
})
