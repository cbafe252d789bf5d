/**
 * The command line as a user runs it (child processes of the real entry): list, approve,
 * block, pending, label, delete, doctor; exit codes 0/1/2, errors in one line, nothing from
 * the wire printed raw. `--help` and `list` never load the gate, undici or fastify.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { createTestCa, loadedPackages, tempDir } from '@gatehouse/testkit'
import { openStore } from '../src/db/index.ts'
import { getEntry, recordObservations } from '../src/fingerprints/store.ts'
import { cli, MAIN } from './helpers.ts'

const dir = tempDir('tlsgate-cli-')
const db = join(dir.path, 'gate.db')
const FP = 't13d1516h2_8daaf6152771_d8a2da3f94cd'
const OTHER = 't13d3112h2_e8f1e7e78f70_6bebaf5329ac'

before(async () => {
  const store = await openStore(db)
  const now = new Date().toISOString()
  const base = {
    count: 3,
    refused: 0,
    firstSeen: now,
    lastSeen: now,
    sightings: [{ ip: '192.0.2.7', port: 50000, last_seen: now }],
  }
  await recordObservations(
    store.db,
    [
      {
        ...base,
        fingerprint: FP,
        metadata: JSON.stringify({ sni: 'shop.example', ja3: 'a'.repeat(32), ja4: FP, ja4_r: 'raw' }),
      },
      // A hostile SNI can only come from a damaged or foreign database; it is still printed escaped.
      { ...base, fingerprint: OTHER, metadata: JSON.stringify({ sni: 'evil\u001b[2J.example', ja3: 'b'.repeat(32) }) },
    ],
    100,
    now,
  )
  await store.close()
})
after(() => dir.remove())

async function stored(fp: string) {
  const store = await openStore(db)
  try {
    return await getEntry(store.db, fp)
  } finally {
    await store.close()
  }
}

test('list: a table with SNI, -v adds JA3 and the raw JA4, --json; control characters escaped', async () => {
  const [plain, verbose, json] = await Promise.all([
    cli(['list', '--db', db]),
    cli(['list', '-v', '--db', db]),
    cli(['list', '--json', '--db', db]),
  ])
  assert.equal(plain.code, 0, plain.stderr)
  assert.match(plain.stdout, /^FINGERPRINT\s+VERDICT\s+COUNT\s+LAST SEEN\s+SNI\s+IPS\s+LABEL/)
  assert.match(plain.stdout, new RegExp(`${FP}\\s+new\\s+3\\s+\\S+\\s+shop\\.example\\s+192\\.0\\.2\\.7`))
  assert.doesNotMatch(plain.stdout, /\u001b/)
  assert.match(verbose.stdout, new RegExp(`ja3: ${'a'.repeat(32)}`))
  assert.match(verbose.stdout, /ja4_r: raw/)
  const rows = JSON.parse(json.stdout) as { fingerprint: string; verdict: string; decided: boolean; sni: string }[]
  assert.deepEqual(rows.map((r) => [r.fingerprint, r.verdict, r.decided]).sort(), [
    [FP, 'pending', false],
    [OTHER, 'pending', false],
  ])
})

test('without --db the store commands take the database from the config file serve reads; --db wins', async () => {
  const file = join(dir.path, 'config.json')
  writeFileSync(file, JSON.stringify({ db, max_fingerprints: 10 }))
  const [viaEnv, viaFlag, flagWins] = await Promise.all([
    cli(['list', '--json'], { TLSGATE_CONFIG: file }),
    cli(['list', '--json', '--config', file]),
    cli(['list', '--json', '--db', join(dir.path, 'other.db')], { TLSGATE_CONFIG: file }),
  ])
  assert.equal(viaEnv.code, 0, viaEnv.stderr)
  assert.equal((JSON.parse(viaEnv.stdout) as unknown[]).length, 2)
  assert.equal(viaFlag.stdout, viaEnv.stdout)
  assert.equal(flagWins.code, 1, '--db wins over the file')
  assert.match(flagWins.stderr, /other\.db/)
})

test('approve with a label, block, pending, label, delete change the store; exit 0', async () => {
  const approve = await cli(['approve', '--label', 'monitoring', '--db', db, FP.toUpperCase()])
  assert.equal(approve.code, 0, approve.stderr)
  assert.equal(approve.stdout, `${FP} approved (label "monitoring")\n`)
  let e = await stored(FP)
  assert.deepEqual([e?.verdict, e?.label, e?.actor?.startsWith('cli:')], ['approved', 'monitoring', true])
  assert.equal((await cli(['block', '--db', db, FP])).code, 0)
  assert.equal((await stored(FP))?.verdict, 'blocked')
  assert.equal((await cli(['pending', '--db', db, FP])).code, 0)
  assert.equal((await stored(FP))?.verdict, 'pending')
  assert.equal((await cli(['label', '--db', db, FP, 'checkout probe'])).code, 0)
  e = await stored(FP)
  assert.deepEqual([e?.verdict, e?.label], ['pending', 'checkout probe'])
  const del = await cli(['delete', '--db', db, OTHER])
  assert.equal(del.code, 0, del.stderr)
  assert.equal(await stored(OTHER), undefined)
})

test('block --for: the block ends then, and list says until when; a bad duration is a usage error', async () => {
  const r = await cli(['block', '--for', '24h', '--db', db, FP])
  assert.equal(r.code, 0, r.stderr)
  const until = /^\S+ blocked until (\S+)$/.exec(r.stdout.trim())?.[1]
  assert.ok(until && Math.abs(Date.parse(until) - Date.now() - 86_400_000) < 60_000, r.stdout)
  assert.equal((await stored(FP))?.expires_at, until)
  const list = await cli(['list', '--json', '--db', db])
  assert.equal(
    (JSON.parse(list.stdout) as { fingerprint: string; expires_at: string }[]).find((e) => e.fingerprint === FP)
      ?.expires_at,
    until,
  )
  const bad = await cli(['approve', '--for', '1', '--db', db, FP])
  assert.equal(bad.code, 2)
  assert.match(bad.stderr, /^tlsgate: --for "1": a duration from 1m to 8760h/)
  assert.equal((await stored(FP))?.verdict, 'blocked', 'a refused --for changes nothing')
  assert.equal((await cli(['pending', '--db', db, FP])).code, 0)
  assert.equal((await stored(FP))?.expires_at, null)
})

test('backup copies the store to a new file that reads as the original, never over an existing one', async () => {
  const file = join(dir.path, 'backup.db')
  const r = await cli(['backup', '--db', db, file])
  assert.equal(r.code, 0, r.stderr)
  assert.match(r.stdout, /^backed up to .*backup\.db \(\d+\.\d MiB, checked\)\n$/)
  const list = async (path: string) => {
    const l = await cli(['list', '--json', '--db', path])
    assert.equal(l.code, 0, l.stderr)
    return JSON.parse(l.stdout) as unknown[]
  }
  const original = await list(db)
  assert.ok(original.length > 0)
  assert.deepEqual(await list(file), original)
  const again = await cli(['backup', '--db', db, file])
  assert.deepEqual([again.code, again.stderr], [1, `tlsgate: ${file} exists; back up to a new file\n`])
})

test('usage errors exit 2, failures exit 1, each one line on stderr', async () => {
  const bad = await cli(['block', '--db', db, 'not-a-ja4'])
  assert.equal(bad.code, 2)
  assert.match(bad.stderr, /^tlsgate: fingerprint must be a JA4 fingerprint/)
  assert.equal(bad.stderr.trim().split('\n').length, 1)
  const ctl = await cli(['label', '--db', db, FP, 'a\u0007b'])
  assert.equal(ctl.code, 2)
  const order = await cli(['block', FP, '--db', db])
  assert.equal(order.code, 2)
  assert.match(order.stderr, /flags go before the fingerprint/)
  const missing = await cli(['block', '--db', db, 't13d0000h2_000000000000_000000000000'])
  assert.equal(missing.code, 1)
  assert.match(missing.stderr, /is not in the store/)
  const nodb = await cli(['list', '--db', join(dir.path, 'absent.db')])
  assert.equal(nodb.code, 1)
  assert.match(nodb.stderr, /does not exist/)
})

test('doctor summarises serve inputs without opening anything; bad routes and config stop it', async () => {
  const ok = await cli([
    'doctor',
    '--route',
    '0.0.0.0:443=127.0.0.1:8443',
    '--route',
    'smtp:0.0.0.0:25=127.0.0.1:2525',
    '--db',
    db,
  ])
  assert.equal(ok.code, 0, ok.stderr)
  assert.match(ok.stdout, /0\.0\.0\.0:443 -> 127\.0\.0\.1:8443 \(TLS\)/)
  assert.match(ok.stdout, /smtp:0\.0\.0\.0:25 -> 127\.0\.0\.1:2525 \(SMTP, STARTTLS\)/)
  assert.match(ok.stdout, /blocked clients refused; unknown and pending pass/)
  assert.match(ok.stdout, /limits: .*, 4096 concurrent connections\n/)
  // Under a low open-file limit, the cap serve would use, and why (util-linux's prlimit).
  const low = await new Promise<string>((resolve, reject) =>
    execFile(
      'prlimit',
      ['--nofile=1024', process.execPath, MAIN, 'doctor', '--route', ':443=127.0.0.1:8443', '--db', db],
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    ),
  )
  assert.match(
    low,
    /limits: .*, 240 concurrent connections \(max_connections 4096, lowered: the open file limit is 1024\)\n/,
  )
  const none = await cli(['doctor', '--db', db])
  assert.equal(none.code, 1)
  assert.match(none.stderr, /--route: at least one route is required/)
  const http = join(dir.path, 'http.json')
  writeFileSync(http, JSON.stringify({ control_plane: { url: 'http://cp.example', instance_id: 'g', token: 'x' } }))
  const refused = await cli(['doctor', '--route', ':443=127.0.0.1:8443', '--config', http])
  assert.equal(refused.code, 1)
  assert.match(refused.stderr, /control_plane\.url/)
})

test("doctor shows the control-plane client certificate's expiry and fails on an expired one", async () => {
  const ca = createTestCa()
  try {
    const config = (days: number) => {
      const cert = ca.issueClient('tls-edge-1', { days })
      const file = join(dir.path, `mtls-${days}.json`)
      writeFileSync(
        file,
        JSON.stringify({
          control_plane: {
            url: 'https://cp.example.test',
            instance_id: 'tls-edge-1',
            client_cert: cert.certPath,
            client_key: cert.keyPath,
            ca: ca.caPath,
          },
        }),
      )
      return file
    }
    const ok = await cli(['doctor', '--route', ':443=127.0.0.1:8443', '--db', db, '--config', config(30)])
    assert.equal(ok.code, 0, ok.stderr)
    assert.match(ok.stdout, /^client certificate: valid until \S+Z \(29 days left\)$/m)
    assert.match(ok.stdout, /^control-plane CA: valid until \S+Z \(59 days left\)$/m)
    const expired = await cli(['doctor', '--route', ':443=127.0.0.1:8443', '--db', db, '--config', config(-1)])
    assert.equal(expired.code, 1)
    assert.match(expired.stderr, /^tlsgate: control_plane\.client_cert: EXPIRED on \S+Z; the control plane refuses/m)
  } finally {
    ca.remove()
  }
})

test('--help and list load neither undici, fastify nor pg', async () => {
  for (const args of [['--help'], ['list', '--db', db], ['block', '--help']]) {
    const r = await loadedPackages([MAIN, ...args])
    assert.equal(r.code, 0, r.stderr)
    for (const pkg of ['undici', 'fastify', 'pg'])
      assert.ok(!r.packages.includes(pkg), `${pkg} loaded by ${args.join(' ')}`)
  }
})
