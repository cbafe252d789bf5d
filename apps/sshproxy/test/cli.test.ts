/**
 * The store commands. Exit codes, output and the effect on the database are checked through
 * child processes (the real binary); the wider matrices of usage errors and `--help` run the
 * same CLI entry in this process, to keep the suite fast.
 */
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'
import { openStore } from '../src/db/index.ts'
import { recordObservations, setLabel } from '../src/fingerprints/store.ts'
import { fingerprintMaterial } from '../src/wire/fingerprint.ts'
import { readClientHandshake } from '../src/wire/handshake.ts'
import { captureClientHello, cli, cliInProcess, readEntries } from './helpers.ts'

const dir = tempDir('sshproxy-cli-')
const db = join(dir.path, 'gate.db')
const FP = 'a'.repeat(32)
const OTHER = 'b'.repeat(32)
const UNKNOWN = 'c'.repeat(32)
let material = ''

before(async () => {
  const hello = await captureClientHello('openssh')
  const s = readClientHandshake(hello)
  if (s.kind !== 'done') throw new Error('capture failed')
  const store = await openStore(db)
  const now = new Date().toISOString()
  const base = {
    identification: s.identification.line,
    clientVersion: s.identification.softwareVersion,
    metadata: JSON.stringify(s.kexinit),
    count: 2,
    enrolled: 0,
    firstSeen: now,
    lastSeen: now,
    sightings: [{ ip: '192.0.2.7', port: 50000, last_seen: now }],
  }
  await recordObservations(
    store.db,
    [
      { ...base, fingerprint: FP },
      { ...base, fingerprint: OTHER },
    ],
    100,
    now,
  )
  await store.close()
  material = fingerprintMaterial(s.kexinit)
})
after(() => dir.remove())
before(() => writeFileSync(join(dir.path, 'broken.json'), '{"db": '))

async function stored(fp: string) {
  return (await readEntries(db)).find((e) => e.fingerprint === fp)
}

describe('store commands (child processes)', () => {
  test('list prints a table; -v adds the client identification, version and raw material; --json', async () => {
    const [plain, verbose, json] = await Promise.all([
      cli(['list', '--db', db]),
      cli(['list', '-v', '--db', db]),
      cli(['list', '--json', '--db', db]),
    ])
    assert.equal(plain.code, 0, plain.stderr)
    assert.match(plain.stdout, /^FINGERPRINT\s+VERDICT\s+COUNT\s+LAST SEEN\s+IPS\s+LABEL/)
    assert.match(plain.stdout, new RegExp(`${FP}\\s+new\\s+2\\s+\\S+\\s+192\\.0\\.2\\.7`))
    assert.doesNotMatch(plain.stdout, /material:/)
    assert.match(verbose.stdout, /client: SSH-2\.0-OpenSSH_9\.2p1 \S+ \(version OpenSSH_9\.2p1\)/)
    assert.ok(verbose.stdout.includes(`material: ${material}`))
    const entries = JSON.parse(json.stdout) as { fingerprint: string; verdict: string; decided: boolean }[]
    assert.deepEqual(entries.map((e) => [e.fingerprint, e.verdict, e.decided]).sort(), [
      [FP, 'pending', false],
      [OTHER, 'pending', false],
    ])
  })

  test('list never prints a synced label or a client string raw: escapes, C1 and bidi controls are shown escaped', async () => {
    const hostileDb = join(dir.path, 'hostile.db')
    const label = 'evil\u001b]52;c;ZXZpbA==\u0007\u001b[2J\r\nfake \u009b31m \u202egnp.exe'
    const store = await openStore(hostileDb)
    const now = new Date().toISOString()
    await recordObservations(
      store.db,
      [
        {
          identification: 'SSH-2.0-evil\u001b[31m',
          clientVersion: 'evil\u001b[31m',
          metadata: '{}',
          count: 1,
          enrolled: 0,
          firstSeen: now,
          lastSeen: now,
          sightings: [{ ip: '192.0.2.8', port: 50001, last_seen: now }],
          fingerprint: UNKNOWN,
        },
      ],
      100,
      now,
    )
    await setLabel(store.db, UNKNOWN, label, now)
    await store.close()
    const [plain, verbose, json] = await Promise.all([
      cli(['list', '--db', hostileDb]),
      cli(['list', '-v', '--db', hostileDb]),
      cli(['list', '--json', '--db', hostileDb]),
    ])
    for (const r of [plain, verbose, json]) {
      assert.equal(r.code, 0, r.stderr)
      assert.doesNotMatch(r.stdout, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/)
    }
    assert.ok(plain.stdout.includes('evil\\e]52;c;ZXZpbA==\\x07\\e[2J\\r\\nfake \\x9b31m \\u202egnp.exe'), plain.stdout)
    assert.ok(verbose.stdout.includes('client: SSH-2.0-evil\\e[31m'), verbose.stdout)
    assert.equal((JSON.parse(json.stdout) as { label: string }[])[0]!.label, label)
  })

  test('approve --label, block, pending, label, delete change the entry and say so', async () => {
    let r = await cli(['approve', '--db', db, '--label', 'build server', FP])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout.trim(), `${FP} approved (label "build server")`)
    let e = (await stored(FP))!
    assert.deepEqual([e.verdict, e.label], ['approved', 'build server'])
    assert.match(e.actor!, /^cli:/)
    assert.notEqual(e.decided_at, null)
    r = await cli(['block', '--db', db, FP])
    assert.equal(r.code, 0, r.stderr)
    assert.equal((await stored(FP))!.verdict, 'blocked')
    r = await cli(['pending', '--db', db, FP.toUpperCase()])
    assert.equal(r.code, 0, r.stderr)
    e = (await stored(FP))!
    assert.deepEqual([e.verdict, e.label], ['pending', 'build server'])
    // A right-to-left override is allowed in a label (not a control character), stored as
    // given, and echoed as an escape, never raw to the terminal.
    r = await cli(['label', '--db', db, FP, 'build \u202eserver'])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, `${FP} label "build \\u202eserver"\n`)
    assert.equal((await stored(FP))!.label, 'build \u202eserver')
    r = await cli(['label', '--db', db, FP, 'renamed'])
    assert.equal(r.code, 0, r.stderr)
    assert.equal((await stored(FP))!.label, 'renamed')
    r = await cli(['delete', '--db', db, OTHER])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(await stored(OTHER), undefined)
  })

  test('block --for and approve --for: the verdict ends then (list says until when); a verdict without --for is for good', async () => {
    const before = Date.now()
    let r = await cli(['block', '--for', '2h', '--db', db, FP])
    assert.equal(r.code, 0, r.stderr)
    const until = /^[0-9a-f]{32} blocked until (\S+)$/.exec(r.stdout.trim())?.[1]
    assert.ok(until, r.stdout)
    const left = Date.parse(until) - before
    assert.ok(left >= 7_200_000 && left < 7_260_000, until)
    assert.equal((await stored(FP))!.expires_at, until)
    const list = await cli(['list', '--db', db])
    assert.match(list.stdout, new RegExp(`${FP}\\s+blocked until ${until.replace(/\./g, '\\.')}`))
    r = await cli(['approve', '--for', '30m', '--label', 'contractor', '--db', db, FP])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^[0-9a-f]{32} approved until \S+ \(label "contractor"\)\n$/)
    r = await cli(['approve', '--db', db, FP])
    assert.equal(r.code, 0, r.stderr)
    assert.equal((await stored(FP))!.expires_at, null, 'a verdict without --for is for good')
    for (const bad of ['30s', '9000h', 'soon', '']) {
      const refused = await cli(['block', '--for', bad, '--db', db, FP])
      assert.equal(refused.code, 2, bad)
      assert.equal(
        refused.stderr,
        `sshproxy: --for ${JSON.stringify(bad)}: a duration from 1m to 8760h, written like 30m, 4h or 168h\n`,
      )
    }
    const e = (await stored(FP))!
    assert.deepEqual([e.verdict, e.expires_at], ['approved', null], 'a refused --for changes nothing')
    // As the earlier test left it, for the next.
    assert.equal((await cli(['label', '--db', db, FP, 'renamed'])).code, 0)
  })

  test('exit codes: 1 for an unknown fingerprint or a missing database, 2 for usage errors', async () => {
    const missing = join(dir.path, 'nope', 'x.db')
    const [unknown, badFp, lateFlag, noDb, viaEnv] = await Promise.all([
      cli(['approve', '--db', db, UNKNOWN]),
      cli(['block', '--db', db, 'xyz']),
      cli(['approve', '--db', db, FP, '--label', 'late']),
      cli(['list', '--db', missing]),
      cli(['list', '--json'], { SSHPROXY_DB: db }),
    ])
    assert.equal(unknown.code, 1)
    assert.equal(
      unknown.stderr,
      `sshproxy: fingerprint ${UNKNOWN} is not in the store (sshproxy list shows the stored ones)\n`,
    )
    assert.equal(badFp.code, 2)
    assert.match(
      badFp.stderr,
      /^sshproxy: fingerprint must be 32 hexadecimal characters, as sshproxy list shows them, got "xyz"\n$/,
    )
    assert.equal(lateFlag.code, 2)
    assert.match(lateFlag.stderr, /too many arguments.*\(flags go before the fingerprint\)\n$/)
    assert.equal(noDb.code, 1)
    assert.match(noDb.stderr, /database .*x\.db does not exist/)
    assert.equal(existsSync(missing), false, 'store commands never create a database')
    assert.equal(viaEnv.code, 0, viaEnv.stderr)
    assert.equal(JSON.parse(viaEnv.stdout)[0].fingerprint, FP)
    assert.equal((await stored(FP))!.label, 'renamed', 'nothing changed')
  })

  test('without --db the store commands take the database from the config file serve reads', async () => {
    const file = join(dir.path, 'config.json')
    // A whole serve config (strict for serve): the store commands read its db and nothing else.
    writeFileSync(file, JSON.stringify({ db, metrics_listen: '127.0.0.1:0', max_fingerprints: 10 }))
    const [viaEnv, viaFlag, flagWins, badFile, missingFile] = await Promise.all([
      cli(['list', '--json'], { SSHPROXY_CONFIG: file }),
      cli(['list', '--json', '--config', file]),
      cli(['list', '--json', '--db', join(dir.path, 'other.db')], { SSHPROXY_CONFIG: file }),
      cli(['list'], { SSHPROXY_CONFIG: join(dir.path, 'broken.json') }),
      cli(['list', '--config', join(dir.path, 'absent.json')]),
    ])
    assert.equal(viaEnv.code, 0, viaEnv.stderr)
    assert.equal(JSON.parse(viaEnv.stdout)[0].fingerprint, FP)
    assert.equal(viaFlag.stdout, viaEnv.stdout)
    assert.equal(flagWins.code, 1, '--db wins over the file')
    assert.match(flagWins.stderr, /other\.db does not exist; check --db, \$SSHPROXY_DB or the config file's db/)
    assert.equal(badFile.code, 1)
    assert.match(badFile.stderr, /broken\.json/)
    assert.equal(missingFile.code, 1)
    assert.equal(missingFile.stderr.trim().split('\n').length, 1, missingFile.stderr)
    assert.match(missingFile.stderr, /absent\.json/)
  })

  test('backup copies the store to a new file that reads as the original, never over an existing one', async () => {
    const file = join(dir.path, 'backup.db')
    const r = await cli(['backup', '--db', db, file])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^backed up to .*backup\.db \(\d+\.\d MiB, checked\)\n$/)
    const original = await readEntries(db)
    assert.ok(original.length > 0)
    assert.deepEqual(await readEntries(file), original)
    const again = await cli(['backup', '--db', db, file])
    assert.deepEqual([again.code, again.stderr], [1, `sshproxy: ${file} exists; back up to a new file\n`])
  })

  test('--help exits 0', async () => {
    const [top, sub] = await Promise.all([cli(['--help']), cli(['approve', '--help'])])
    assert.equal(top.code, 0)
    assert.match(top.stdout, /Commands:[\s\S]*correlate/)
    assert.equal(sub.code, 0)
    assert.match(sub.stdout, /^Usage: sshproxy approve \[options\] <fingerprint>/)
  })
})

describe('store commands (in process)', () => {
  test('every command has --help', async () => {
    for (const cmd of ['list', 'approve', 'block', 'pending', 'label', 'delete', 'serve', 'doctor', 'correlate']) {
      const r = await cliInProcess([cmd, '--help'])
      assert.equal(r.code, 0, `${cmd}: ${r.stderr}`)
      assert.match(r.stdout, new RegExp(`^Usage: sshproxy ${cmd}`))
      assert.match(r.stdout, /--db/)
    }
  })

  test('usage errors are one line, exit 2, and change nothing', async () => {
    const before = await readEntries(db)
    const cases: [string[], RegExp][] = [
      [['block', '--db', db], /missing required argument 'fingerprint'/],
      [['label', '--db', db, FP, 'bad\u001b[31mlabel'], /label must not contain control characters/],
      [['label', '--db', db, FP, 'x'.repeat(300)], /label must be at most 256 characters/],
      [['list', '--db', db, '--bogus'], /unknown option '--bogus'/],
      [['correlate', '--db', db, FP], /required option '--log <path>' not specified/],
      [['correlate', '--db', db, '--log', db, '--window', 'soon', FP], /--window: invalid duration/],
      [['frobnicate'], /unknown command 'frobnicate'/],
    ]
    for (const [args, message] of cases) {
      const r = await cliInProcess(args)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
      assert.match(r.stderr, message)
      assert.match(r.stderr, /^sshproxy: [^\n]+\n$/, 'one line')
    }
    assert.deepEqual(await readEntries(db), before)
  })

  test('every verdict command refuses an unknown fingerprint with exit 1', async () => {
    for (const args of [['approve'], ['block'], ['pending'], ['delete'], ['label'], ['correlate', '--log', db]]) {
      const r = await cliInProcess([...args, '--db', db, UNKNOWN, ...(args[0] === 'label' ? ['x'] : [])])
      assert.equal(r.code, 1, `${args[0]}: ${r.stderr}`)
      assert.match(r.stderr, /is not in the store/)
    }
    const unreadable = await cliInProcess(['correlate', '--db', db, '--log', join(dir.path, 'none.log'), FP])
    assert.equal(unreadable.code, 1)
    assert.match(unreadable.stderr, /log file .*none\.log cannot be read \(ENOENT\)/)
  })
})
