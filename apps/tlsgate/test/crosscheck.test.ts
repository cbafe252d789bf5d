/**
 * JA3 and JA4 against implementations that are not ours, on the same bytes:
 * - JA3: Wireshark's TLS dissector (`tshark`, fields `tls.handshake.ja3_full` and
 *   `tls.handshake.ja3`), reading a pcap this test builds around each ClientHello.
 * - JA4: httptoolkit's `read-tls-client-hello` (npm, Apache-2.0, a dev dependency only), which
 *   also computes JA3.
 * The hellos are real ones captured from openssl s_client, curl and Chromium, the published
 * ones (FoxIO's example, a Chrome 143 capture), a hello split over many records, and edge cases
 * (TLS 1.2 and 1.0 clients, no extensions at all). Where the npm package departs from the JA4
 * spec (the version from supported_versions, the 99 cap, a binary ALPN value, an empty extension
 * list), the last test pins what the spec says and compares the parts both compute alike.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { after, before, test } from 'node:test'
import { requireBinary, tempDir } from '@gatehouse/testkit'
import { calculateJa3, calculateJa4, readTlsClientHello } from 'read-tls-client-hello'
import { readClientHello } from '../src/wire/client-hello.ts'
import { computeFingerprints, type TlsFingerprints } from '../src/wire/fingerprints.ts'
import { chromiumHello, curlHello, opensslHello } from './capture.ts'
import { buildHello, CHROME_143, FOXIO_EXAMPLE, type HelloSpec, records } from './hello-builder.ts'
import { pcapFile, tcpFrame } from './pcap.ts'

const TLS12_CLIENT: HelloSpec = {
  ciphers: [0xc02f, 0xc030, 0x009e, 0x0035, 0x000a],
  extensions: [0x0000, 0x000b, 0x000a, 0x000d, 0x0010, 0x0017],
  groups: [0x001d, 0x0017],
  pointFormats: [0, 1, 2],
  sigAlgs: [0x0401, 0x0501, 0x0201],
  alpn: ['http/1.1'],
  sni: 'legacy.example.test',
}

const named: Array<[string, Buffer]> = []
let work: ReturnType<typeof tempDir>

before(async () => {
  // Captured sequentially: each capture starts its own client.
  named.push(['openssl s_client', await opensslHello()])
  named.push(['curl', await curlHello()])
  named.push(['Chromium', await chromiumHello()])
  named.push(['FoxIO example', buildHello(FOXIO_EXAMPLE)])
  named.push(['Chrome 143 (published)', buildHello(CHROME_143)])
  named.push(['Chrome 143 in 97-byte records', buildHello({ ...CHROME_143, recordSize: 97 })])
  named.push(['a TLS 1.2 client', buildHello(TLS12_CLIENT)])
  named.push(['a TLS 1.0 client', buildHello({ ...TLS12_CLIENT, legacyVersion: 0x0301 })])
  named.push(['no extensions', buildHello({ ciphers: [0x002f, 0x0035], extensions: [] })])
  work = tempDir('tlsgate-crosscheck-')
})
after(() => work?.remove())

function ours(bytes: Buffer): TlsFingerprints {
  const state = readClientHello(bytes)
  assert.equal(state.kind, 'done', state.kind === 'error' ? state.error.message : 'incomplete')
  if (state.kind !== 'done') throw new Error('unreachable')
  return computeFingerprints(state.hello)
}

/** The hello's handshake message in one record: the npm package reads one record only. */
function oneRecord(bytes: Buffer): Buffer {
  const parts: Buffer[] = []
  for (let at = 0; at < bytes.length; ) {
    const length = bytes.readUInt16BE(at + 3)
    parts.push(bytes.subarray(at + 5, at + 5 + length))
    at += 5 + length
  }
  return records(Buffer.concat(parts))
}

async function theirs(bytes: Buffer): Promise<{ ja3: string; ja4: string }> {
  const hello = await readTlsClientHello(Readable.from([oneRecord(bytes)], { objectMode: false }))
  return { ja3: calculateJa3(hello), ja4: calculateJa4(hello) }
}

test('JA3 text and hash equal Wireshark’s (tshark) for every hello, one per TCP stream of a built pcap', () => {
  const tshark = requireBinary('/usr/bin/tshark', 'tshark')
  const file = join(work.path, 'hellos.pcap')
  writeFileSync(file, pcapFile(named.map(([, bytes], i) => tcpFrame(bytes, 40_000 + i))))
  const out = execFileSync(
    tshark,
    ['-n', '-r', file, '-Y', 'tls.handshake.type == 1', '-T', 'fields', '-e', 'tcp.srcport'].concat([
      '-e',
      'tls.handshake.ja3_full',
      '-e',
      'tls.handshake.ja3',
    ]),
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const rows = new Map(
    out
      .trim()
      .split('\n')
      .map((line) => {
        const [port, full, hash] = line.split('\t')
        return [Number(port) - 40_000, { full, hash }] as const
      }),
  )
  assert.equal(rows.size, named.length, `tshark dissected ${rows.size} of ${named.length} hellos:\n${out}`)
  named.forEach(([name, bytes], i) => {
    const f = ours(bytes)
    const row = rows.get(i)
    assert.equal(f.ja3Text, row?.full, `${name}: JA3 text`)
    assert.equal(f.ja3, row?.hash, `${name}: JA3 hash`)
  })
})

test('JA4 and JA3 equal read-tls-client-hello’s for real and published hellos', async () => {
  for (const [name, bytes] of named) {
    const f = ours(bytes)
    const other = await theirs(bytes)
    assert.equal(f.ja3, other.ja3, `${name}: JA3`)
    // The npm package departs from the spec for a hello without extensions (the last test);
    // the rest must agree on the whole JA4.
    if (name === 'no extensions') continue
    assert.equal(f.ja4, other.ja4, `${name}: JA4`)
  }
  // Sanity: the hellos compared are the real clients' (TLS 1.3 with SNI) and differ from each other.
  const real = named.slice(0, 3).map(([, bytes]) => ours(bytes).ja4)
  for (const ja4 of real) assert.match(ja4, /^t13d\d{4}[0-9a-z]{2}_[0-9a-f]{12}_[0-9a-f]{12}$/)
  assert.equal(new Set(real).size, 3, `three clients, three JA4: ${real.join(' ')}`)
})

test('JA4 edge cases follow the spec where read-tls-client-hello departs from it; the hashes agree', async (t) => {
  const b = (ja4: string) => ja4.split('_').slice(1).join('_')
  // "If extension 0x002b exists (supported_versions), then the version is the highest value in
  // the extension ... If the extension doesn't exist, then the TLS version is the value of the
  // Protocol Version": a client offering TLS 1.2 only through the extension is 12.
  const tls12ext = buildHello({ ...TLS12_CLIENT, extensions: [...TLS12_CLIENT.extensions, 0x002b], versions: [0x0303] })
  const cases: Array<[string, Buffer, string]> = [
    ['TLS 1.2 client', buildHello(TLS12_CLIENT), 't12d0506h1'],
    ['TLS 1.0 client', buildHello({ ...TLS12_CLIENT, legacyVersion: 0x0301 }), 't10d0506h1'],
    ['supported_versions with TLS 1.2 only', tls12ext, 't12d0507h1'],
    // "Number of ciphers ... if there are more than 99, output 99".
    [
      '120 cipher suites',
      buildHello({ ...FOXIO_EXAMPLE, ciphers: Array.from({ length: 120 }, (_, i) => 0x0100 + i) }),
      't13d9916h2',
    ],
    // "If the first or last byte of the first ALPN value is not ASCII alphanumeric": the first
    // and last characters of its hex form (0xab ... 0xcd gives "ad"), as Wireshark and ATS do.
    ['a binary first ALPN value', buildHello({ ...TLS12_CLIENT, alpn: ['\xab-\xcd', 'h2'] }), 't12d0506ad'],
  ]
  for (const [name, bytes, partA] of cases) {
    const f = ours(bytes)
    const other = await theirs(bytes)
    t.diagnostic(`${name}: ours ${f.ja4}, read-tls-client-hello ${other.ja4}`)
    assert.equal(f.ja4.split('_')[0], partA, `${name}: part a per the spec`)
    assert.equal(b(f.ja4), b(other.ja4), `${name}: cipher and extension hashes agree`)
  }
  // FoxIO documents the extension hash without signature algorithms: the list alone, no
  // underscore, `6d807ffa2a79` for the example's extensions.
  const noSigs = ours(buildHello({ ...FOXIO_EXAMPLE, sigAlgs: [] }))
  assert.equal(noSigs.ja4, 't13d1516h2_8daaf6152771_6d807ffa2a79')
  // An empty sorted extension list makes c twelve zeros (JA4.md; Wireshark's JA4 does the
  // same since its merge request 17679), where the npm package hashes the empty string. The
  // list is empty without extensions and also when SNI and ALPN are the only ones.
  for (const [name, bytes, ja4] of [
    [
      'no extensions',
      buildHello({ ciphers: [0x002f, 0x0035], extensions: [] }),
      't12i020000_f54dd463d39b_000000000000',
    ],
    [
      'only SNI and ALPN',
      buildHello({ ciphers: [0x002f, 0x0035], extensions: [0x0000, 0x0010], alpn: ['http/1.1'] }),
      't12d0202h1_f54dd463d39b_000000000000',
    ],
  ] as const) {
    const other = await theirs(bytes)
    t.diagnostic(`${name}: ours ${ours(bytes).ja4}, read-tls-client-hello ${other.ja4}`)
    assert.equal(ours(bytes).ja4, ja4, name)
    assert.equal(other.ja4.split('_')[0], ja4.split('_')[0], `${name}: part a agrees`)
    assert.equal(other.ja4.split('_')[1], ja4.split('_')[1], `${name}: cipher hash agrees`)
  }
})
