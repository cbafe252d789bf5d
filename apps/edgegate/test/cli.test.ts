/**
 * The CLI as a user runs it (child processes): node registry, administrators, decisions,
 * usage errors, and startup failures of `serve` (one line on stderr, non-zero exit).
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createServer as createTlsServer } from 'node:tls'
import { freePort, tempDir } from '@gatehouse/testkit'
import { call, cli, type Edgegate, makeTls, newDatabase, startEdgegate } from './helpers.ts'

const tls = makeTls()
const FP = '0123456789abcdef0123456789abcdef'

describe('edgegate CLI', () => {
  let database: string
  let gate: Edgegate
  const run = (...args: string[]) => cli(args, { EDGEGATE_DATABASE: database })
  const tokenOf = (stdout: string) => /token: (\S+)/.exec(stdout)?.[1] ?? ''

  before(async () => {
    database = await newDatabase('sqlite', async () => {
      throw new Error('unused')
    })
    // Admin commands refuse a database that does not exist; migrate (or serve) creates it.
    const refused = await run('admin', 'add', 'alice')
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /^edgegate: database .* does not exist; point --database/)
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr)
    assert.equal((await run('migrate')).code, 0)
    const first = await run('admin', 'add', 'alice')
    assert.equal(first.code, 0, first.stderr)
    gate = await startEdgegate(database, tls)
  })
  after(async () => {
    await gate?.stop()
    tls.ca.remove()
  })

  test('node add|list|disable|enable|rotate-token', async () => {
    const add = await run('node', 'add', '--kind', 'sshgate', 'edge-1')
    assert.equal(add.code, 0, add.stderr)
    const token = tokenOf(add.stdout)
    assert.match(token, /^egn_[A-Za-z0-9_-]{43}$/)
    const policy = () => call(tls, gate.base, '/v1/policy?instance_id=edge-1', { token })
    assert.equal((await policy()).status, 200)

    const cert = await run('node', 'add', '--kind', 'tlsgate', '--cert-fingerprint', 'AB:'.repeat(31) + 'AB', 'edge-2')
    assert.equal(cert.code, 0, cert.stderr)
    assert.doesNotMatch(cert.stdout, /token:/)
    const both = await run(
      'node',
      'add',
      '--kind',
      'tlsgate',
      '--cert-name',
      'x',
      '--cert-fingerprint',
      'ab'.repeat(32),
      'edge-3',
    )
    assert.equal(both.code, 2)
    const badKind = await run('node', 'add', '--kind', 'mailgate', 'edge-4')
    assert.equal(badKind.code, 2, 'a kind outside the list is a usage error, as --status is')
    assert.match(badKind.stderr, /kind must be one of sshgate, tlsgate, websignal, log_watcher/)
    const dup = await run('node', 'add', '--kind', 'sshgate', 'edge-1')
    assert.equal(dup.code, 1)
    assert.match(dup.stderr, /already exists/)

    const list = await run('node', 'list', '--json')
    const nodes = JSON.parse(list.stdout)
    assert.deepEqual(
      nodes.map((n: { instance_id: string; kind: string; active: boolean }) => [n.instance_id, n.kind, n.active]),
      [
        ['edge-1', 'sshgate', true],
        ['edge-2', 'tlsgate', true],
      ],
    )
    assert.ok(!list.stdout.includes(token), 'tokens are never listed')

    assert.equal((await run('node', 'disable', 'edge-1')).code, 0)
    const disabled = await policy()
    assert.equal(disabled.status, 403)
    assert.equal(disabled.body.error.code, 'node_inactive')
    assert.equal((await run('node', 'enable', 'edge-1')).code, 0)
    assert.equal((await policy()).status, 200)

    const rotated = await run('node', 'rotate-token', 'edge-1')
    assert.equal(rotated.code, 0, rotated.stderr)
    const fresh = tokenOf(rotated.stdout)
    assert.notEqual(fresh, token)
    assert.equal((await policy()).status, 401, 'the old token stops working')
    assert.equal((await call(tls, gate.base, '/v1/policy?instance_id=edge-1', { token: fresh })).status, 200)
    const certRotate = await run('node', 'rotate-token', 'edge-2')
    assert.equal(certRotate.code, 1)
    assert.match(certRotate.stderr, /client certificate/)
    assert.equal((await run('node', 'disable', 'nope')).code, 1)
  })

  test("a node's kind shows before its token is of use: node show, add and rotate-token say it; rotate-token --kind refuses another", async () => {
    // A TLS gate registered by hand with the SSH gate's kind: the mistake behind a bare 403.
    const add = await run('node', 'add', '--kind', 'sshgate', 'tls-wrong')
    assert.equal(add.code, 0, add.stderr)
    assert.match(add.stdout, /^node tls-wrong added \(sshgate\)$/m)
    const token = tokenOf(add.stdout)
    // The SMTP report is the TLS gate's own endpoint (both gate kinds pull policy); the guard
    // answers before the body is read.
    const pull = (t: string) =>
      call(tls, gate.base, '/v1/smtp/reports?instance_id=tls-wrong', { method: 'POST', body: {}, token: t })
    const refused = await pull(token)
    assert.equal(refused.status, 403)
    assert.equal(refused.body.error.code, 'wrong_node_kind')
    assert.equal(refused.body.error.kind, 'sshgate')
    assert.equal(
      refused.body.error.message,
      'node tls-wrong is registered as kind sshgate; this endpoint is for tlsgate nodes (check with: edgegate node show tls-wrong)',
    )

    const show = await run('node', 'show', 'tls-wrong')
    assert.equal(show.code, 0, show.stderr)
    assert.match(show.stdout, /^instance:\s+tls-wrong$/m)
    assert.match(show.stdout, /^kind:\s+sshgate$/m)
    assert.match(show.stdout, /^auth:\s+token$/m)
    assert.match(show.stdout, /^last seen:\s+never$/m, 'a refused request is not heard from')
    assert.ok(!show.stdout.includes(token), 'never the token')
    const json = JSON.parse((await run('node', 'show', '--json', 'tls-wrong')).stdout)
    assert.equal(json.instance_id, 'tls-wrong')
    assert.equal(json.kind, 'sshgate')
    const missing = await run('node', 'show', 'nope')
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /^edgegate: no node nope \(edgegate node list shows them all\)$/m)

    const again = await run('node', 'add', '--kind', 'tlsgate', 'tls-wrong')
    assert.equal(again.code, 1)
    assert.match(
      again.stderr,
      /node tls-wrong already exists \(kind sshgate, not tlsgate\); see edgegate node show tls-wrong/,
    )

    const mismatch = await run('node', 'rotate-token', '--kind', 'tlsgate', 'tls-wrong')
    assert.equal(mismatch.code, 1)
    assert.match(
      mismatch.stderr,
      /node tls-wrong is registered as kind sshgate, not tlsgate: its token was not rotated/,
    )
    assert.equal(mismatch.stdout, '')
    assert.equal(
      (await pull(token)).body.error.code,
      'wrong_node_kind',
      'the old token still authenticates: nothing changed',
    )
    const badKind = await run('node', 'rotate-token', '--kind', 'mailgate', 'tls-wrong')
    assert.equal(badKind.code, 2)

    const rotated = await run('node', 'rotate-token', '--kind', 'sshgate', 'tls-wrong')
    assert.equal(rotated.code, 0, rotated.stderr)
    assert.match(rotated.stdout, /^node tls-wrong \(sshgate\): new token$/m)
    const plain = await run('node', 'rotate-token', 'tls-wrong')
    assert.match(plain.stdout, /^node tls-wrong \(sshgate\): new token$/m)
    assert.equal((await pull(token)).status, 401)
  })

  test('admin add|list|remove, and decisions from the CLI with their actor', async () => {
    const add = await run('admin', 'add', 'bob')
    let bob = tokenOf(add.stdout)
    assert.match(bob, /^ega_/)
    assert.equal((await call(tls, gate.base, '/api/nodes', { token: bob })).status, 200)
    const list = await run('admin', 'list')
    assert.match(list.stdout, /^NAME +CREATED +LAST USED +EXPIRES$/m)
    assert.match(list.stdout, /^alice +\d{4}-\S+ +never +never$/m)
    assert.match(list.stdout, /^bob +\d{4}-\S+ +\d{4}-/m, 'a presented token records its use')

    await run('node', 'add', '--kind', 'sshgate', 'edge-9')
    const approve = await run('decision', 'approve', '--instance', 'edge-9', '--label', 'ci runner', FP)
    assert.equal(approve.code, 0, approve.stderr)
    let d = (await call(tls, gate.base, `/api/decisions/edge-9/${FP}`, { token: bob })).body
    assert.equal(d.status, 'approved')
    assert.equal(d.label, 'ci runner')
    assert.match(d.actor, /^cli:/)
    assert.equal((await run('decision', 'block', '--instance', 'edge-9', FP)).code, 0)
    assert.equal((await run('decision', 'label', '--instance', 'edge-9', FP, 'scanner')).code, 0)
    const long = await run('decision', 'label', '--instance', 'edge-9', FP, 'x'.repeat(257))
    assert.equal(long.code, 2, 'a malformed argument is a usage error')
    assert.match(long.stderr, /at most 256 characters/)
    d = (await call(tls, gate.base, `/api/decisions/edge-9/${FP}`, { token: bob })).body
    assert.deepEqual([d.status, d.label], ['blocked', 'scanner'])
    assert.equal((await run('decision', 'pending', '--instance', 'edge-9', FP)).code, 0)
    assert.equal((await call(tls, gate.base, `/api/decisions/edge-9/${FP}`, { token: bob })).body.status, 'pending')
    assert.equal((await run('decision', 'delete', '--instance', 'edge-9', FP)).code, 0)
    assert.equal((await call(tls, gate.base, `/api/decisions/edge-9/${FP}`, { token: bob })).status, 404)
    const missing = await run('decision', 'delete', '--instance', 'edge-9', FP)
    assert.equal(missing.code, 1)
    assert.ok(missing.stderr.includes(`node "edge-9" has no decision on fingerprint "${FP}"`), missing.stderr)
    const relabel = await run('decision', 'label', '--instance', 'edge-9', FP, 'again')
    assert.equal(relabel.code, 1, 'a deleted decision cannot be relabelled')
    assert.match(relabel.stderr, /no decision/)
    assert.equal((await run('decision', 'approve', '--instance', 'edge-9', FP)).code, 0)
    d = (await call(tls, gate.base, `/api/decisions/edge-9/${FP}`, { token: bob })).body
    assert.deepEqual([d.status, d.label], ['approved', ''], 'a verdict revives it, without the old label')
    const noInstance = await run('decision', 'approve', FP)
    assert.equal(noInstance.code, 2)
    assert.match(noInstance.stderr, /instance: required/)

    // Rotating: the new token works, the old one and the sessions it opened stop at once.
    const signIn = await call(tls, gate.base, '/api/session', { body: { token: bob } })
    assert.equal(signIn.status, 200)
    const cookie = String(signIn.headers['set-cookie']).split(';')[0]!
    const asSession = () => call(tls, gate.base, '/api/session', { headers: { cookie } })
    assert.equal((await asSession()).status, 200)
    const rotated = await run('admin', 'rotate-token', 'bob')
    assert.equal(rotated.code, 0, rotated.stderr)
    const bob2 = tokenOf(rotated.stdout)
    assert.match(bob2, /^ega_/)
    assert.notEqual(bob2, bob)
    assert.equal((await call(tls, gate.base, '/api/nodes', { token: bob })).status, 401, 'the old token stops')
    assert.equal((await asSession()).status, 401, 'so do its dashboard sessions')
    assert.equal((await call(tls, gate.base, '/api/nodes', { token: bob2 })).status, 200)
    const json = JSON.parse((await run('admin', 'list', '--json')).stdout) as { name: string; last_used_at: unknown }[]
    assert.equal(json.find((a) => a.name === 'alice')?.last_used_at, null)
    assert.match(String(json.find((a) => a.name === 'bob')?.last_used_at), /^\d{4}-/)
    const unknown = await run('admin', 'rotate-token', 'nobody')
    assert.deepEqual([unknown.code, unknown.stderr], [1, 'edgegate: no administrator nobody\n'])
    const audit = JSON.parse((await run('audit', 'list', '--action', 'admin', '--json')).stdout) as {
      action: string
      target: string
    }[]
    assert.deepEqual(
      audit.filter((e) => e.target === 'bob').map((e) => e.action),
      ['admin.rotate_token', 'admin.add'],
    )
    bob = bob2

    assert.equal((await run('admin', 'remove', 'bob')).code, 0)
    assert.equal(
      (await call(tls, gate.base, '/api/nodes', { token: bob })).status,
      401,
      'a removed admin token stops working',
    )
    assert.equal((await run('admin', 'remove', 'bob')).code, 1)
  })

  test("a decision's fingerprint takes the gate's form: malformed ones exit 2, upper case is the gate's lower case", async () => {
    await run('node', 'add', '--kind', 'sshgate', 'edge-fp')
    await run('node', 'add', '--kind', 'tlsgate', 'tls-fp')
    await run('node', 'add', '--kind', 'websignal', 'web-fp')
    const policy = async () => {
      const r = await run('decision', 'list', '--instance', 'edge-fp', '--json')
      return (JSON.parse(r.stdout) as { fingerprint: string; status: string; label: string }[]).map((d) => [
        d.fingerprint,
        d.status,
        d.label,
      ])
    }
    for (const bad of ['zzz', FP.slice(1), `${FP}0`, `${FP.slice(1)}g`, 't13d1516h2_8daaf6152771_d8a2da3f94cd']) {
      const r = await run('decision', 'approve', '--instance', 'edge-fp', bad)
      assert.equal(r.code, 2, `${bad}: ${r.stderr}`)
      assert.match(
        r.stderr,
        /^edgegate: ".*" is not a fingerprint of edge-fp: an SSH gate fingerprint is 32 hexadecimal characters/,
      )
      assert.equal(r.stderr.trim().split('\n').length, 1)
    }
    assert.deepEqual(await policy(), [], 'nothing half-written')
    // What an operator copies from a tool that prints hex in upper case is the gate's fingerprint.
    const upper = await run('decision', 'approve', '--instance', 'edge-fp', FP.toUpperCase())
    assert.equal(upper.code, 0, upper.stderr)
    assert.match(upper.stdout, new RegExp(`^edge-fp ${FP} approved at `))
    assert.equal((await run('decision', 'label', '--instance', 'edge-fp', FP.toUpperCase(), 'ops')).code, 0)
    assert.deepEqual(await policy(), [[FP, 'approved', 'ops']])
    assert.equal((await run('decision', 'delete', '--instance', 'edge-fp', FP.toUpperCase())).code, 0)
    assert.deepEqual(await policy(), [])

    const ja4 = 't13d1516h2_8daaf6152771_d8a2da3f94cd'
    const tls = await run('decision', 'block', '--instance', 'tls-fp', ja4.toUpperCase())
    assert.equal(tls.code, 0, tls.stderr)
    assert.match(tls.stdout, new RegExp(`^tls-fp ${ja4} blocked at `))
    const notGate = await run('decision', 'approve', '--instance', 'web-fp', FP)
    assert.equal(notGate.code, 1)
    assert.equal(notGate.stderr, 'edgegate: web-fp is a websignal node: decisions are for sshgate and tlsgate nodes\n')
    const dir = tempDir('edgegate-import-')
    const file = join(dir.path, 'gate-list.json')
    writeFileSync(file, JSON.stringify([{ fingerprint: 'zzz', verdict: 'approved', decided: true, label: '' }]))
    const importBad = await run('decision', 'import', '--instance', 'edge-fp', file)
    dir.remove()
    assert.equal(importBad.code, 1)
    assert.match(
      importBad.stderr,
      /edge-fp\/"zzz": an SSH gate fingerprint is 32 hexadecimal characters; nothing was imported/,
    )
    assert.deepEqual(await policy(), [])
  })

  test('status says whether serve answers at its listen address (flag, environment, config file or default, and which), not only what the database holds', async () => {
    const dir = tempDir('edgegate-status-')
    try {
      const config = join(dir.path, 'edgegate.json')
      writeFileSync(config, JSON.stringify({ database, listen: `127.0.0.1:${gate.port}` }))
      const up = await cli(['status', '--config', config])
      assert.equal(up.code, 0, up.stderr)
      assert.match(
        up.stdout,
        new RegExp(
          `^server: answering at https://127\\.0\\.0\\.1:${gate.port} \\(/readyz 200, ready; listen address from the config file ${config}\\)\n`,
        ),
      )
      assert.match(up.stdout, /^database: sqlite /m)
      // The environment over the file, as for serve; the flag over both; each named in the answer.
      const elsewhere = await freePort()
      writeFileSync(config, JSON.stringify({ database, listen: `127.0.0.1:${elsewhere}` }))
      const fromEnv = await cli(['status', '--config', config, '--json'], { EDGEGATE_LISTEN: `127.0.0.1:${gate.port}` })
      assert.deepEqual(
        (({ listen, listen_from, answering }) => ({ listen, listen_from, answering }))(
          JSON.parse(fromEnv.stdout).server,
        ),
        { listen: `127.0.0.1:${gate.port}`, listen_from: '$EDGEGATE_LISTEN', answering: true },
      )
      const viaConfigEnv = await cli(['status'], { EDGEGATE_CONFIG: config })
      assert.match(
        viaConfigEnv.stdout,
        new RegExp(
          `^server: not answering at https://127\\.0\\.0\\.1:${elsewhere} \\(ECONNREFUSED; listen address from the config file ${config}\\)`,
        ),
      )
      const fromFlag = await cli(['status', '--config', config, '--listen', `127.0.0.1:${gate.port}`], {
        EDGEGATE_LISTEN: `127.0.0.1:${elsewhere}`,
      })
      assert.match(fromFlag.stdout, /^server: answering at .*; listen address from --listen\)/)
      writeFileSync(config, JSON.stringify({ database }))
      const byDefault = await cli(['status', '--config', config, '--json'])
      assert.deepEqual((({ listen, listen_from }) => ({ listen, listen_from }))(JSON.parse(byDefault.stdout).server), {
        listen: '127.0.0.1:8443',
        listen_from: `the default, as no --listen, $EDGEGATE_LISTEN or "listen" in the config file ${config} names one`,
      })

      const nobody = await freePort()
      const down = await run('status', '--listen', `127.0.0.1:${nobody}`)
      assert.equal(down.code, 0, 'a report, not a failure: the database part still holds')
      assert.match(
        down.stdout,
        new RegExp(
          `^server: not answering at https://127\\.0\\.0\\.1:${nobody} \\(ECONNREFUSED; listen address from --listen\\): .*is edgegate serve running`,
        ),
      )
      const json = JSON.parse((await run('status', '--listen', `127.0.0.1:${nobody}`, '--json')).stdout)
      assert.deepEqual(
        [json.server.answering, json.server.error, json.database.reachable],
        [false, 'ECONNREFUSED', true],
      )
      // A TLS server that answers the handshake and then trickles bytes, never a status line: one
      // deadline ends the probe (its idle timeout, restarted by every byte, waited as long as the
      // bytes came, here 1024 of them at 10 a second).
      const trickle = createTlsServer({ cert: tls.server.cert, key: tls.server.key }, (socket) => {
        const drip = setInterval(() => socket.write('H'), 100)
        socket.on('close', () => clearInterval(drip))
        socket.on('error', () => clearInterval(drip))
      })
      await new Promise<void>((resolve) => trickle.listen(0, '127.0.0.1', resolve))
      try {
        const port = (trickle.address() as AddressInfo).port
        const stuck = await run('status', '--listen', `127.0.0.1:${port}`)
        assert.equal(stuck.code, 0, stuck.stderr)
        assert.match(
          stuck.stdout,
          new RegExp(
            `^server: not answering at https://127\\.0\\.0\\.1:${port} \\(no answer within 3 s; listen address from --listen\\)`,
          ),
        )
      } finally {
        trickle.close()
      }
      const bad = await run('status', '--listen', 'bogus')
      assert.equal(bad.code, 1)
      assert.match(bad.stderr, /^edgegate: --listen: invalid listen address "bogus"/)
    } finally {
      dir.remove()
    }
  })

  test('backup while serve runs: the copy reads as the original; an existing file is never written over', async () => {
    const dir = tempDir('edgegate-backup-')
    try {
      const file = join(dir.path, 'copy.db')
      const r = await run('backup', file)
      assert.equal(r.code, 0, r.stderr)
      assert.match(r.stdout, /^backed up to .*copy\.db \(\d+\.\d MiB, checked\)\n$/)
      const ids = (stdout: string) => (JSON.parse(stdout) as { instance_id: string }[]).map((n) => n.instance_id)
      const original = await run('node', 'list', '--json')
      const copy = await cli(['node', 'list', '--json'], { EDGEGATE_DATABASE: `sqlite:${file}` })
      assert.equal(copy.code, 0, copy.stderr)
      assert.ok(ids(original.stdout).length > 0)
      assert.deepEqual(ids(copy.stdout), ids(original.stdout))
      const again = await run('backup', file)
      assert.equal(again.code, 1)
      assert.match(again.stderr, /^edgegate: .*copy\.db exists; back up to a new file\n$/)
    } finally {
      dir.remove()
    }
  })

  test('usage errors exit 2; --help exits 0', async () => {
    assert.equal((await cli([])).code, 2)
    assert.equal((await cli(['frobnicate'])).code, 2)
    assert.equal((await run('node')).code, 2)
    assert.equal((await run('node', 'explode')).code, 2)
    assert.equal((await run('node', 'list', '--bogus')).code, 2)
    assert.equal((await run('node', 'disable')).code, 2)
    const help = await cli(['--help'])
    assert.equal(help.code, 0)
    assert.match(help.stdout, /edgegate node add/)
    const serveHelp = await cli(['serve', '--help'])
    assert.equal(serveHelp.code, 0)
    assert.match(serveHelp.stdout, /--sighting-retention/)
    assert.match((await run('decision', 'approve', '--help')).stdout, /--label/)
  })

  test('serve startup failures print one clear line and exit 1', async () => {
    const dir = tempDir('edgegate-startup-')
    const port = await freePort()
    const base = ['serve', '--listen', `127.0.0.1:${port}`, '--database', `sqlite:${join(dir.path, 's.db')}`]
    const tlsArgs = ['--tls-cert', tls.server.certPath, '--tls-key', tls.server.keyPath]
    const expectOneLine = async (args: string[], pattern: RegExp, env: NodeJS.ProcessEnv = {}) => {
      const r = await cli(args, env)
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`)
      const lines = r.stderr.trim().split('\n')
      assert.equal(lines.length, 1, r.stderr)
      assert.match(lines[0]!, pattern)
      assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace')
    }
    await expectOneLine([...base, '--tls-key', tls.server.keyPath], /^edgegate: tls_cert: required/)
    await expectOneLine(
      [...base, '--tls-cert', join(dir.path, 'missing.crt'), '--tls-key', tls.server.keyPath],
      /TLS certificate .*missing\.crt cannot be read/,
    )
    await expectOneLine(
      [...base, ...tlsArgs, '--sighting-retention', 'forever'],
      /EDGEGATE_SIGHTING_RETENTION|sighting-retention/,
    )
    await expectOneLine(
      [...base, ...tlsArgs, '--fingerprint-retention', '1h'],
      /fingerprint_retention: at least 24h, or 0 to keep undecided aggregates/,
    )
    await expectOneLine(
      [...base, ...tlsArgs, '--deleted-decision-retention', '12h'],
      /deleted_decision_retention: at least 24h, or 0 to keep deleted decisions/,
    )
    const closed = await freePort()
    await expectOneLine(
      ['serve', '--listen', `127.0.0.1:${port}`, '--database', `postgres://postgres@127.0.0.1:${closed}/x`, ...tlsArgs],
      /database .* is unreachable/,
    )
    const badRanges = join(dir.path, 'ranges.txt')
    writeFileSync(badRanges, '10.0.0.0/8\nnot a range\n')
    await expectOneLine([...base, ...tlsArgs, '--trusted-ranges-file', badRanges], /trusted ranges: .*line 2/)
    await expectOneLine([...base, ...tlsArgs, '--trusted-ranges-url', 'http://127.0.0.1/ranges'], /https/)
    const config = join(dir.path, 'config.json')
    writeFileSync(config, JSON.stringify({ listen: `127.0.0.1:${port}`, nope: 1 }))
    await expectOneLine(['serve', '--config', config, ...tlsArgs], /nope/)
  })
})
