/**
 * The dnsctl CLI as a user runs it: child processes against `dnsctl serve` (itself a child, on
 * a real knotd): zone create without zone text, rrset set/delete with dry runs printed as
 * record-level diffs, export/import, diff, history and rollback; and the API's text/dns bodies.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { type Child, dnsQuery, freePort, type Knot, loadedPackages, startKnot, tempDir } from '@gatehouse/testkit'
import fc from 'fast-check'
import { json } from './helpers.ts'
import { cli, MAIN, startServe } from './processes.ts'

describe('dnsctl CLI over the API', () => {
  let knot: Knot
  let server: Child
  let base: string
  const dir = tempDir('dnsctl-cli-')
  let env: NodeJS.ProcessEnv

  before(async () => {
    knot = await startKnot()
    // The server reads the config file; the CLI finds the API through the same file.
    ;({ server, base, env } = await startServe(knot, dir.path))
  })
  after(async () => {
    await server?.stop()
    await knot?.stop()
    dir.remove()
  })

  const run = (...args: string[]) => cli(args, env)
  const ok = async (...args: string[]) => {
    const r = await run(...args)
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }
  const answers = async (name: string, type: 'A' | 'MX' | 'TXT') =>
    (await dnsQuery(knot.port, name, type)).answers.map((a) => String((a as { data: unknown }).data)).sort()

  test('zone create from flags, rrset set/delete with dry-run diffs, list, export/import, diff, history, rollback', async () => {
    const zone = 'cli.test'
    const dry = await ok(
      'zone',
      'create',
      zone,
      '--ns',
      'ns1',
      '--ns-address',
      '192.0.2.53',
      '--serial',
      '7',
      '--dry-run',
    )
    assert.equal(
      dry,
      [
        'cli.test: 3 to add, 0 to remove, 0 unchanged',
        '+ @ 3600 IN SOA ns1.cli.test. hostmaster.cli.test. 7 3600 900 604800 300',
        '+ @ 3600 IN NS ns1.cli.test.',
        '+ ns1 3600 IN A 192.0.2.53',
        '',
      ].join('\n'),
    )
    assert.equal((await run('zone', 'list', '--json')).stdout, '[]\n', 'a dry run creates nothing')
    assert.match((await run('zone', 'list')).stdout, /^no zones yet: dnsctl zone create example\.com --ns ns1 /)
    assert.match(
      await ok('zone', 'create', zone, '--ns', 'ns1', '--ns-address', '192.0.2.53', '--serial', '7'),
      /^zone cli\.test created: serial 7, 3 records/,
    )
    assert.equal(await knot.soaSerial(zone), 7)

    const planned = await ok('rrset', 'set', '--dry-run', zone, 'www', 'A', '192.0.2.10', '192.0.2.11', '--ttl', '300')
    assert.equal(
      planned,
      [
        'cli.test: 3 to add, 1 to remove, 2 unchanged',
        '- @ 3600 IN SOA ns1.cli.test. hostmaster.cli.test. 7 3600 900 604800 300',
        '+ @ 3600 IN SOA ns1.cli.test. hostmaster.cli.test. 8 3600 900 604800 300',
        '+ www 300 IN A 192.0.2.10',
        '+ www 300 IN A 192.0.2.11',
        '',
      ].join('\n'),
    )
    assert.equal(await knot.soaSerial(zone), 7, 'the dry run published nothing')
    assert.match(
      await ok('rrset', 'set', zone, 'www', 'A', '192.0.2.10', '192.0.2.11', '--ttl', '300'),
      /set www A; serial 8/,
    )
    assert.deepEqual(await answers('www.cli.test', 'A'), ['192.0.2.10', '192.0.2.11'])
    assert.match(await ok('rrset', 'set', zone, '@', 'MX', '10 mail'), /serial 9/)
    assert.match(await ok('rrset', 'set', zone, 'www', 'A', '192.0.2.12'), /serial 10/)
    const rrsets = JSON.parse(await ok('rrset', 'list', zone, '--json'))
    assert.deepEqual(
      rrsets.filter((r: { name: string }) => r.name === 'www'),
      [{ name: 'www', ttl: 300, type: 'A', data: '192.0.2.12' }],
      'set keeps the RRset TTL when --ttl is absent',
    )
    const table = await ok('rrset', 'list', zone)
    assert.match(table, /^NAME +TTL +TYPE +DATA$/m)
    assert.match(table, /^@ +3600 +MX +10 mail\.cli\.test\.$/m)

    const file = join(dir.path, 'cli.test.zone')
    await ok('zone', 'export', zone, file)
    const exported = readFileSync(file, 'utf8')
    assert.match(exported, /^\$ORIGIN cli\.test\.\n@ 3600 IN SOA /)
    writeFileSync(
      file,
      exported.replace(/^www 300 IN A 192\.0\.2\.12$/m, 'www 300 IN A 192.0.2.13\ntxt 60 IN TXT "hello"'),
    )
    const plan = await ok('diff', zone, file)
    assert.match(plan, /^cli\.test: 3 to add, 2 to remove, \d+ unchanged$/m)
    assert.match(plan, /^- www 300 IN A 192\.0\.2\.12$/m)
    assert.match(plan, /^\+ www 300 IN A 192\.0\.2\.13$/m)
    assert.match(plan, /^\+ txt 60 IN TXT "hello"$/m)
    const planJson = JSON.parse(await ok('diff', zone, file, '--json'))
    assert.equal(planJson.added, 3)
    assert.deepEqual(await answers('www.cli.test', 'A'), ['192.0.2.12'], 'diff changes nothing')
    assert.match(await ok('zone', 'import', zone, file), /^zone cli\.test imported: serial 11/)
    assert.deepEqual(await answers('www.cli.test', 'A'), ['192.0.2.13'])
    const stdin = await cli(['diff', zone, '-'], env, readFileSync(file, 'utf8'))
    assert.match(
      stdin.stdout,
      /^cli\.test: 0 to add, 0 to remove, \d+ unchanged \(no changes\)$/m,
      'a serial alone is no change',
    )

    assert.match(await ok('rrset', 'delete', zone, 'txt', 'TXT'), /deleted txt TXT; serial 12/)
    const missing = await run('rrset', 'delete', zone, 'txt', 'TXT')
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /^dnsctl: .*\(rrset_not_found\)\n$/)

    const history = JSON.parse(await ok('history', zone, '--json'))
    assert.equal(history.length, 5, 'one prior revision per committed change after the create')
    const beforeImport = history.find((h: { serial: number }) => h.serial === 10)
    assert.match(await ok('history', zone), /^REVISION +SERIAL +SAVED +REPLACED BY +BYTES$/m)
    const rollbackPlan = await ok('rollback', '--dry-run', zone, beforeImport.revision)
    assert.match(rollbackPlan, /^\+ www 300 IN A 192\.0\.2\.12$/m)
    // A serial names the newest prior revision that had it; one no revision had is refused.
    assert.equal(await ok('rollback', '--dry-run', zone, '10'), rollbackPlan)
    const noSerial = await run('rollback', zone, '999')
    assert.deepEqual([noSerial.code, noSerial.stdout], [1, ''])
    assert.equal(
      noSerial.stderr,
      `dnsctl: the history of ${zone} holds no revision with serial 999 (dnsctl history ${zone} lists them)\n`,
    )
    assert.match(await ok('rollback', zone, beforeImport.revision), /rolled back to the content of .*: serial 13/)
    assert.deepEqual(await answers('www.cli.test', 'A'), ['192.0.2.12'])
    assert.equal(await knot.soaSerial(zone), 13, 'the serial moves forward')

    const badRev = await run('rollback', zone, 'nope')
    assert.equal(badRev.code, 1)
    assert.equal(badRev.stderr.trim().split('\n').length, 1)
    assert.match(await ok('zone', 'delete', zone), /deleted/)
    assert.equal((await run('zone', 'list', '--json')).stdout, '[]\n')
  })

  test('zone import of an unchanged file, rrset set of the records an RRset has and a rollback to the current content publish nothing', async () => {
    const zone = 'same.test'
    await ok('zone', 'create', zone, '--ns', 'ns1', '--ns-address', '192.0.2.53', '--serial', '2026120401')
    await ok('rrset', 'set', zone, 'www', 'A', '192.0.2.10', '192.0.2.11', '--ttl', '300')
    const file = join(dir.path, 'same.test.zone')
    await ok('zone', 'export', zone, file)
    const zoneFile = join(knot.zonesDir, `${zone}.zone`)
    const traces = async () => ({
      served: await knot.soaSerial(zone),
      list: await ok('zone', 'list', '--json'),
      history: await ok('history', zone, '--json'),
      audit: await (await fetch(`${base}/v1/zones/${zone}/audit`)).text(),
      file: readFileSync(zoneFile, 'utf8'),
      mtime: statSync(zoneFile).mtimeMs,
    })
    const before = await traces()
    assert.equal(before.served, 2026120402)

    const unchanged = 'zone same.test unchanged (serial 2026120402): nothing published\n'
    assert.equal(await ok('zone', 'import', zone, file), unchanged)
    // The file as kept in a config repository: its own serial, its own layout.
    writeFileSync(
      file,
      readFileSync(file, 'utf8')
        .replace(' 2026120402 ', ' 2026120499 ')
        .replace(/^www 300 IN A /gm, 'www.same.test. 5m A '),
    )
    assert.equal(await ok('zone', 'import', zone, file), unchanged)
    assert.equal((await cli(['zone', 'import', zone, '-'], env, readFileSync(file, 'utf8'))).stdout, unchanged)
    assert.equal(
      await ok('zone', 'import', zone, file, '--dry-run'),
      'same.test: 0 to add, 0 to remove, 5 unchanged (no changes)\n',
    )
    assert.equal(await ok('diff', zone, file), 'same.test: 0 to add, 0 to remove, 5 unchanged (no changes)\n')
    assert.equal(
      await ok('rrset', 'set', zone, 'www', 'A', '192.0.2.11', '192.0.2.10'),
      'same.test: www A unchanged (serial 2026120402): nothing published\n',
    )
    assert.deepEqual(await traces(), before, 'no serial, revision, history, audit or zone file change')

    // A real change moves the serial once; a rollback to the content the zone has again is unchanged.
    assert.match(await ok('rrset', 'set', zone, 'www', 'A', '192.0.2.12'), /set www A; serial 2026120403,/)
    assert.match(await ok('zone', 'import', zone, file), /^zone same\.test imported: serial 2026120499, 5 records/)
    const history = JSON.parse(await ok('history', zone, '--json')) as { revision: string; serial: number }[]
    assert.deepEqual(
      history.map((h) => h.serial),
      [2026120403, 2026120402, 2026120401],
    )
    assert.equal(
      await ok('rollback', zone, '2026120402'),
      `zone same.test unchanged (serial 2026120499): it already has the content of ${history[1]!.revision}, nothing published\n`,
    )
    assert.equal(await knot.soaSerial(zone), 2026120499)
    assert.equal((JSON.parse(await ok('history', zone, '--json')) as unknown[]).length, 3)
    await ok('zone', 'delete', zone)
  })

  test('backup while serve runs, restored into a new state folder and a new knotd: the zones, history and blocklist configuration', async () => {
    const zone = 'restore.test'
    await ok('zone', 'create', zone, '--ns', 'ns1', '--ns-address', '192.0.2.53', '--serial', '41')
    await ok('rrset', 'set', zone, 'www', 'A', '192.0.2.80')
    const current = await fetch(`${base}/v1/blocklists/config`)
    const lists = { sources: ['https://127.0.0.1:9/ads.txt'], allow: ['ok.example'], deny: ['bad.example'] }
    const put = await fetch(`${base}/v1/blocklists/config`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'if-match': current.headers.get('etag')! },
      body: JSON.stringify(lists),
    })
    assert.equal(put.status, 200, await put.text())

    const target = join(dir.path, 'backup-1')
    assert.match(
      await ok('backup', target),
      /^backed up to .*backup-1: the database \(\d+\.\d MiB, checked\), 1 zone file, the blocklist configuration\n$/,
    )
    assert.equal(statSync(target).mode & 0o777, 0o700)
    const again = await run('backup', target)
    assert.deepEqual([again.code, again.stderr], [1, `dnsctl: ${target} exists; back up to a new folder\n`])
    const nowhere = await run('backup', join(dir.path, 'backup-2'), '--state-dir', join(dir.path, 'nowhere'))
    assert.equal(nowhere.code, 1)
    assert.match(nowhere.stderr, /dnsctl\.db does not exist; give --state-dir or --database/)
    assert.ok(!existsSync(join(dir.path, 'backup-2')), 'a failed backup keeps nothing')

    // The restore the README describes, into a second knotd that has never seen the zone.
    const knot2 = await startKnot()
    const dir2 = join(dir.path, 'restored')
    try {
      const state = join(dir2, 'state')
      mkdirSync(state, { recursive: true })
      // The README's restore commands as printed, its three paths set to this test's.
      const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8')
      const steps = /To restore, [^`]*```sh\n[^\n]*\n([^`]*)```/.exec(readme)?.[1]
      assert.ok(steps, 'the README shows the restore commands')
      execFileSync('sh', ['-e', '-c', steps], {
        env: { PATH: process.env.PATH, backup: target, state, zones: knot2.zonesDir },
      })
      const restored = await startServe(knot2, dir2)
      try {
        assert.equal(await knot2.soaSerial(zone), 42)
        const www = await dnsQuery(knot2.port, `www.${zone}`, 'A')
        assert.deepEqual(
          www.answers.map((a) => String((a as { data: unknown }).data)),
          ['192.0.2.80'],
        )
        const history = JSON.parse((await cli(['history', zone, '--json'], restored.env)).stdout)
        assert.deepEqual(
          history.map((h: { serial: number }) => h.serial),
          [41],
          'the earlier revision came along',
        )
        const config = (await (await fetch(`${restored.base}/v1/blocklists/config`)).json()) as Record<string, unknown>
        assert.deepEqual({ sources: config.sources, allow: config.allow, deny: config.deny }, lists)
      } finally {
        await restored.server.stop()
      }
    } finally {
      await knot2.stop()
    }
    await ok('zone', 'delete', zone)
  })

  test('usage errors exit 2; an unreachable API is one line naming the URL; --help has examples', async () => {
    for (const args of [
      ['zone'],
      ['zone', 'create'],
      ['rrset', 'set', 'a.test', 'www'],
      ['diff', 'a.test'],
      ['bogus-command'],
    ]) {
      const r = await run(...args)
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`)
    }
    const noGlue = await run('zone', 'create', 'glue.test', '--ns', 'ns1')
    assert.deepEqual([noGlue.code, noGlue.stderr.trim().split('\n').length], [2, 1])
    // zone create's flags are checked before any zone text is made: the flag is named, exit 2
    // (they reached the server as text it refused at "line 2", TTL "NaN"; a dotted local part
    // of --email became another mailbox).
    for (const [flags, message] of [
      [['--ttl', 'abc'], '--ttl must be an integer from 0 to 2147483647, got "abc"'],
      [['--ttl', '-5'], '--ttl must be an integer from 0 to 2147483647, got "-5"'],
      [['--retry', '1h'], '--retry must be an integer from 0 to 2147483647, got "1h"'],
      [['--minimum', '2147483648'], '--minimum must be an integer from 0 to 2147483647, got "2147483648"'],
      [['--serial', '4294967296'], '--serial must be an integer from 0 to 4294967295, got "4294967296"'],
      [['--ns', 'bad ns'], '--ns "bad ns" is not a DNS name'],
      [['--ns-address', '300.1.1.1'], '--ns-address "300.1.1.1" is not an IPv4 or IPv6 address'],
      [
        ['--email', 'first.last@example.com'],
        '--email "first.last@example.com": give local@domain, with letters, digits, "-" or "_" before the @ (no dots)',
      ],
      [
        ['--email', 'a b@example.com'],
        '--email "a b@example.com": give local@domain, with letters, digits, "-" or "_" before the @ (no dots)',
      ],
    ] as const) {
      const r = await run('zone', 'create', 'flags.test', '--ns', 'ns1.example.net.', ...flags)
      assert.deepEqual([r.code, r.stderr], [2, `dnsctl: ${message}\n`], flags.join(' '))
    }
    for (const args of [
      ['diff', 'a.test', '-'],
      ['zone', 'import', 'a.test', '-'],
    ]) {
      const r = await run(...args, '--role', 'tertiary')
      assert.deepEqual([r.code, r.stderr], [2, 'dnsctl: --role must be primary or secondary, got "tertiary"\n'])
    }
    // serve is the default command: a mistyped command is named as one.
    const typo = await run('zones', 'list')
    assert.equal(typo.code, 2)
    assert.match(
      typo.stderr,
      /^dnsctl: unknown command 'zones' \(commands: serve, .*zone, rrset.*; see dnsctl --help\)\n$/,
    )
    // An address without a scheme, or of another scheme, is a usage error naming where it came from.
    const noScheme = await run('zone', 'list', '--url', '127.0.0.1:8053')
    assert.deepEqual(
      [noScheme.code, noScheme.stderr],
      [2, 'dnsctl: --url: "127.0.0.1:8053" is not a URL (e.g. http://127.0.0.1:8053)\n'],
    )
    const ftp = await cli(['zone', 'list'], { ...env, DNSCTL_URL: 'ftp://x' })
    assert.deepEqual(
      [ftp.code, ftp.stderr],
      [2, 'dnsctl: $DNSCTL_URL: "ftp://x" must start with http:// or https://\n'],
    )
    const closed = await freePort()
    const down = await cli(['zone', 'list'], { ...env, DNSCTL_URL: `http://127.0.0.1:${closed}` })
    assert.equal(down.code, 1)
    assert.equal(
      down.stderr,
      `dnsctl: cannot reach dnsctl at http://127.0.0.1:${closed} (ECONNREFUSED); is dnsctl serve running? set --url or $DNSCTL_URL\n`,
    )
    const help = await run('rrset', 'set', '--help')
    assert.equal(help.code, 0)
    assert.match(help.stdout, /Examples:\n {2}\$ dnsctl rrset set example\.com www A/)
    assert.match((await run('--version')).stdout, /^\d+\.\d+\.\d+\n$/)
    for (const args of [['--help'], ['zone', 'list']]) {
      const r = await loadedPackages([MAIN, ...args], { ...process.env, ...env })
      assert.equal(r.code, 0, r.stderr)
      assert.deepEqual(r.packages, ['commander', 'ipaddr.js'], `${args.join(' ')} loads only the CLI's own packages`)
    }
  })

  test('rrset set without --ttl keeps the TTL of the apex RRset and of an owner written absolute or in capitals', async () => {
    const zone = 'ttl.test'
    await ok('zone', 'create', zone, '--ns', 'ns1', '--ns-address', '192.0.2.53')
    await ok('rrset', 'set', zone, '@', 'MX', '10 mail', '--ttl', '60')
    await ok('rrset', 'set', zone, 'www', 'A', '192.0.2.1', '--ttl', '120')
    await ok('rrset', 'set', zone, '@', 'MX', '20 mail')
    await ok('rrset', 'set', zone, 'WWW.TTL.test.', 'A', '192.0.2.2')
    await ok('rrset', 'set', zone, 'Www', 'A', '192.0.2.3')
    const listed = JSON.parse(await ok('rrset', 'list', zone, '--json')) as {
      name: string
      type: string
      ttl: number
    }[]
    assert.deepEqual(
      listed.filter((r) => r.type === 'MX' || r.name === 'www').map((r) => [r.name, r.type, r.ttl]),
      [
        ['@', 'MX', 60],
        ['www', 'A', 120],
      ],
    )
    // A new RRset still takes the SOA's TTL.
    await ok('rrset', 'set', zone, 'new', 'A', '192.0.2.4')
    const added = JSON.parse(await ok('rrset', 'list', zone, '--json')) as { name: string; ttl: number }[]
    assert.equal(added.find((r) => r.name === 'new')?.ttl, 3600)
    await ok('zone', 'delete', zone)
  })

  test('rrset set: a bad record is named by its argument; a record split over several arguments is told to be quoted; nothing changes; an empty history says so', async () => {
    const zone = 'args.test'
    await ok('zone', 'create', zone, '--ns', 'ns1', '--ns-address', '192.0.2.53', '--serial', '4')
    const split = await run('rrset', 'set', zone, '@', 'MX', '10', 'mail')
    assert.deepEqual(
      [split.code, split.stderr],
      [
        1,
        'dnsctl: record 1 of 2 ("10"): MX record: expected preference and exchange (2 fields), got 1; each RECORD is one argument: quote a record that has spaces, e.g. "10 mail" (invalid_record)\n',
      ],
    )
    const second = await run('rrset', 'set', zone, 'www', 'A', '192.0.2.1', '999.1.1.1')
    assert.deepEqual(
      [second.code, second.stderr],
      [1, 'dnsctl: record 2 of 2 ("999.1.1.1"): A record: invalid IPv4 address "999.1.1.1" (invalid_record)\n'],
    )
    // Errors of the change as a whole keep their message, without the request's field path.
    // A new zone has no prior revision yet: said, not a bare header; a name that was never a
    // zone is an error, not an empty history.
    assert.equal(
      await ok('history', zone),
      `${zone} has no prior revisions yet: every change (rrset set, import, rollback) keeps the one it replaces\n`,
    )
    assert.equal(await ok('history', zone, '--json'), '[]\n')
    const never = await run('history', 'never.test')
    assert.equal(never.code, 1)
    assert.match(never.stderr, /^dnsctl: .*never\.test.* \(zone_not_found\)\n$/)
    const twice = await run('rrset', 'set', zone, 'www', 'A', '192.0.2.1', '192.0.2.1')
    assert.deepEqual([twice.code, twice.stderr], [1, 'dnsctl: duplicate record www A 192.0.2.1 (duplicate_record)\n'])
    assert.deepEqual(
      (JSON.parse(await ok('rrset', 'list', zone, '--json')) as { type: string }[]).map((r) => r.type),
      ['SOA', 'NS', 'A'],
      'nothing was published',
    )
    assert.equal((await dnsQuery(knot.port, zone, 'SOA')).answers.length, 1)
    assert.deepEqual(await answers(`www.${zone}`, 'A'), [])
    await ok('zone', 'delete', zone)
  })

  test('zone files: errors name the file and line; not UTF-8 is refused, not published as U+FFFD; create of an existing zone; export to a bad path', async () => {
    const zone = 'files.test'
    await ok('zone', 'create', zone, '--ns', 'ns1', '--ns-address', '192.0.2.53', '--serial', '3')
    const again = await run('zone', 'create', zone, '--ns', 'ns1', '--ns-address', '192.0.2.53')
    assert.deepEqual(
      [again.code, again.stderr],
      [
        1,
        `dnsctl: zone ${zone} already exists at ${base} (dnsctl zone import replaces it, dnsctl zone delete removes it)\n`,
      ],
    )
    const head = `$ORIGIN ${zone}.\n$TTL 300\n@ IN SOA ns1 hostmaster 9 3600 900 604800 300\n@ IN NS ns1\nns1 IN A 192.0.2.53\n`
    const file = join(dir.path, 'files.zone')
    writeFileSync(file, `${head}x ( IN A 192.0.2.1\n`)
    for (const args of [
      ['zone', 'import', zone, file],
      ['diff', zone, file],
    ]) {
      const r = await run(...args)
      assert.deepEqual(
        [r.code, r.stderr],
        [1, `dnsctl: ${file}:6: parenthesis opened here is never closed (invalid_zone_text)\n`],
      )
    }
    // "café" in Latin-1: the é (0xE9) is not UTF-8.
    writeFileSync(file, Buffer.concat([Buffer.from(`${head}t IN TXT "caf`), Buffer.from([0xe9]), Buffer.from('"\n')]))
    const latin1 = await run('zone', 'import', zone, file)
    assert.deepEqual(
      [latin1.code, latin1.stderr],
      [1, `dnsctl: ${file}:6: not UTF-8 text; write other octets as \\DDD escapes (e.g. "caf\\233")\n`],
    )
    const piped = await cli(['diff', zone, '-'], env, readFileSync(file, 'latin1'))
    assert.equal(piped.code, 0, 'the same text as UTF-8 is fine')
    writeFileSync(file, '\n')
    assert.deepEqual((await run('diff', zone, file)).stderr, `dnsctl: ${file} is empty: no zone text to send\n`)
    assert.equal(await knot.soaSerial(zone), 3, 'nothing was published')
    // The API refuses such bytes in a text/dns body too, naming the line.
    const res = await fetch(`${base}/v1/zones/${zone}?dry_run=true`, {
      method: 'PUT',
      headers: { 'content-type': 'text/dns' },
      body: Buffer.concat([Buffer.from(`${head}t IN TXT "caf`), Buffer.from([0xe9]), Buffer.from('"\n')]),
    })
    const body = await json(res)
    assert.equal(res.status, 400, JSON.stringify(body))
    assert.deepEqual(body.error, {
      code: 'invalid_zone_text',
      message: 'line 6: not UTF-8 text; write other octets as \\DDD escapes (e.g. "caf\\233")',
    })
    const nowhere = join(dir.path, 'no-such-folder', 'x.zone')
    const exported = await run('zone', 'export', zone, nowhere)
    assert.deepEqual([exported.code, exported.stderr], [1, `dnsctl: cannot write ${nowhere}: ENOENT\n`])
    await ok('zone', 'delete', zone)
  })

  test('the API takes text/dns zone bodies; dry runs answer the record diff', async () => {
    const zone = 'text.test'
    const text =
      '$ORIGIN text.test.\n$TTL 300\n@ IN SOA ns1 hostmaster 1 3600 900 604800 300\n@ IN NS ns1\nns1 IN A 192.0.2.1\n'
    const put = (query: string, body: string, headers: Record<string, string> = {}) =>
      fetch(`${base}/v1/zones/${zone}${query}`, {
        method: 'PUT',
        headers: { 'content-type': 'text/dns', ...headers },
        body,
      })
    let res = await put('?dry_run=true', text)
    let body = await json(res)
    assert.equal(res.status, 200, JSON.stringify(body))
    assert.deepEqual([body.dry_run, body.diff.added, body.diff.removed], [true, 3, 0])
    res = await put('', text)
    body = await json(res)
    assert.equal(res.status, 201, JSON.stringify(body))
    assert.equal(await knot.soaSerial(zone), 1)
    const revision = body.revision as string
    res = await put('', text.replace('192.0.2.1', '192.0.2.2'))
    assert.equal(res.status, 428, 'an import still needs the revision')
    res = await put('?dry_run=true', text.replace('192.0.2.1', '192.0.2.2'), { 'if-match': `"${revision}"` })
    body = await json(res)
    assert.deepEqual(
      body.diff.records.filter((r: { record: string }) => !r.record.includes('SOA')),
      [
        { op: 'remove', record: 'ns1 300 IN A 192.0.2.1' },
        { op: 'add', record: 'ns1 300 IN A 192.0.2.2' },
      ],
    )
    res = await put('?role=tertiary', text, { 'if-match': `"${revision}"` })
    body = await json(res)
    assert.equal(res.status, 400)
    assert.match(body.error.message, /role \(primary or secondary\)/)
    res = await put('', 'not a zone', { 'if-match': `"${revision}"` })
    assert.equal(res.status, 400)
    assert.equal(await knot.soaSerial(zone), 1, 'nothing was published by the refused requests')
    res = await fetch(`${base}/v1/zones/${zone}/changes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'if-match': `"${revision}"` },
      body: JSON.stringify({ dry_run: true, changes: [{ action: 'delete', name: 'ns1', type: 'A' }] }),
    })
    body = await json(res)
    assert.equal(res.status, 400, 'removing the glue of an in-zone name server is refused, also in a dry run')

    // Any text as a text/dns body: a diff or a clear 4xx, never a 5xx, and nothing published.
    const line = fc.oneof(
      fc.constantFrom(
        'www 300 IN A 192.0.2.9',
        '$INCLUDE /etc/passwd',
        '@ IN NS ns1',
        'x IN TXT "a\\"b"',
        '(',
        ')',
        ';c',
      ),
      fc.string({ maxLength: 40 }),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(line, { maxLength: 8 }), async (lines) => {
        const r = await put('?dry_run=true', `${text}${lines.join('\n')}\n`, { 'if-match': `"${revision}"` })
        const b = await json(r)
        assert.ok(r.status === 200 || (r.status >= 400 && r.status < 500), `${r.status} ${JSON.stringify(b)}`)
        if (r.status === 200) assert.equal(typeof b.diff.added, 'number')
        else assert.match(b.error.code, /^[a-z_]+$/)
      }),
      { numRuns: 60 },
    )
    assert.equal(await knot.soaSerial(zone), 1)
  })
})
