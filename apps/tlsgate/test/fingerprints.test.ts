/**
 * JA4 and JA3 against published reference values (FoxIO's documented example; a published
 * Chrome 143 capture), and real ClientHellos captured from openssl s_client, curl and Chromium.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { readClientHello } from '../src/wire/client-hello.ts'
import { computeFingerprints } from '../src/wire/fingerprints.ts'
import { chromiumHello, curlHello, opensslHello } from './capture.ts'
import { buildHello, CHROME_143, FOXIO_EXAMPLE } from './hello-builder.ts'

function fingerprintsOf(bytes: Buffer) {
  const state = readClientHello(bytes)
  assert.equal(state.kind, 'done', state.kind === 'error' ? state.error.message : 'incomplete')
  if (state.kind !== 'done') throw new Error('unreachable')
  assert.equal(state.consumed, bytes.length)
  return { hello: state.hello, ...computeFingerprints(state.hello) }
}

test('FoxIO documented example: t13d1516h2_8daaf6152771_e5627efa2ab1', () => {
  const f = fingerprintsOf(buildHello(FOXIO_EXAMPLE))
  assert.equal(f.ja4, 't13d1516h2_8daaf6152771_e5627efa2ab1')
  assert.equal(
    f.ja4Raw,
    't13d1516h2_002f,0035,009c,009d,1301,1302,1303,c013,c014,c02b,c02c,c02f,c030,cca8,cca9_0005,000a,000b,000d,0012,0015,0017,001b,0023,002b,002d,0033,4469,ff01_0403,0804,0401,0503,0805,0501,0806,0601',
  )
})

test('published Chrome 143 capture: JA4 and JA3 match, GREASE ignored, extension order irrelevant to JA4', () => {
  const f = fingerprintsOf(buildHello(CHROME_143))
  assert.equal(f.ja4, 't13d1516h2_8daaf6152771_d8a2da3f94cd')
  assert.equal(
    f.ja3Text,
    '771,4865-4866-4867-49195-49199-49196-49200-52393-52392-49171-49172-156-157-47-53,45-51-16-65037-23-17613-0-11-10-43-65281-35-18-5-13-27,4588-29-23-24,0',
  )
  assert.equal(f.ja3, '98487aa16281980e7d1120d399efb6a4')
  assert.equal(f.hello.sni, 'tls.browserleaks.com')
  // Chrome shuffles its extensions per connection: JA4 stays, JA3 moves.
  const shuffled = fingerprintsOf(buildHello({ ...CHROME_143, extensions: [...CHROME_143.extensions].reverse() }))
  assert.equal(shuffled.ja4, f.ja4)
  assert.notEqual(shuffled.ja3, f.ja3)
})

test('JA4 edge rules: no SNI is i, no ALPN is 00, non-alphanumeric ALPN uses hex, counts cap at 99, TLS 1.2 only', () => {
  const base = { ciphers: [0x1301], extensions: [0x000d], sigAlgs: [0x0403] }
  assert.match(fingerprintsOf(buildHello(base)).ja4, /^t12i010100_/)
  const alpn = fingerprintsOf(buildHello({ ...base, extensions: [0x0010], alpn: ['\xab-\xcd'] }))
  assert.match(alpn.ja4, /^t12i0101ad_/)
  const many = fingerprintsOf(
    buildHello({ ...base, ciphers: Array.from({ length: 120 }, (_, i) => 0x0100 + i), extensions: [0x002b] }),
  )
  assert.match(many.ja4, /^t13i9901/)
  const noSigs = fingerprintsOf(buildHello({ ciphers: [0x002f], extensions: [0x0017] }))
  assert.equal(noSigs.ja4Raw, 't12i010100_002f_0017')
})

for (const [name, capture] of [
  ['openssl s_client', opensslHello],
  ['curl', curlHello],
  ['Chromium', chromiumHello],
] as const) {
  test(`a real ClientHello from ${name} parses, and the fingerprint is stable across connections`, async () => {
    const first = fingerprintsOf(await capture())
    const second = fingerprintsOf(await capture())
    assert.match(first.ja4, /^t13d\d{4}[0-9a-z]{2}_[0-9a-f]{12}_[0-9a-f]{12}$/)
    assert.match(first.ja3, /^[0-9a-f]{32}$/)
    assert.equal(second.ja4, first.ja4, 'same client, same JA4')
    assert.ok(first.hello.sni, 'SNI is read')
    if (name === 'openssl s_client') {
      assert.equal(first.hello.sni, 'gate.example.test')
      assert.match(first.ja4, /^t13d\d{4}h2_/)
    }
    if (name === 'curl') assert.equal(first.hello.sni, 'www.example.test')
  })
}
