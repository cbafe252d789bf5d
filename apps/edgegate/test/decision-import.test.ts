/**
 * `edgegate decision import`, on both databases, through the CLI: an export by `decision list
 * --json` moved to another database (automated decisions skipped), a second import changing
 * nothing, a real `sshproxy list --json` piped in with --instance (undecided entries skipped),
 * and files that cannot be imported named by entry with nothing written.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'
import { openEdgeDatabase } from '../src/db/open.ts'
import { upsertDecision } from '../src/decisions/store.ts'
import { APP, cli, DIALECTS, lazyPostgres, MAIN, NODE, newDatabase, seed } from './helpers.ts'

const pg = lazyPostgres()
after(() => pg.stop())
const dir = tempDir('edgegate-import-')
after(() => dir.remove())

const fp = (n: number) => n.toString(16).padStart(32, '0')
const GATES = [
  { id: 'g1', kind: 'sshgate' },
  { id: 'g2', kind: 'tlsgate' },
  { id: 'w1', kind: 'websignal' },
]

/** The CLI with `input` on its standard input. */
function cliWithInput(args: string[], input: string) {
  const r = spawnSync(NODE, [MAIN, ...args], { input, encoding: 'utf8' })
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr }
}

for (const dialect of DIALECTS) {
  describe(`decision import (${dialect})`, () => {
    test('an export moves to another database; again changes nothing; automated ones are skipped', async () => {
      const from = await newDatabase(dialect, pg.get)
      await seed(from, GATES)
      const on = (database: string, ...args: string[]) => cli([...args, '--database', database])
      assert.equal((await on(from, 'decision', 'approve', '--instance', 'g1', '--label', 'ci "runner"', fp(1))).code, 0)
      assert.equal((await on(from, 'decision', 'block', '--instance', 'g1', fp(2))).code, 0)
      assert.equal((await on(from, 'decision', 'pending', '--instance', 'g2', fp(3))).code, 0)
      assert.equal((await on(from, 'decision', 'block', '--instance', 'g2', '--for', '24h', fp(5))).code, 0)
      const d = await openEdgeDatabase(from, 2)
      try {
        await upsertDecision(d.db, {
          scope_type: 'instance',
          scope_id: 'g2',
          fingerprint: fp(4),
          status: 'blocked',
          label: 'web',
          updated_us: Date.now() * 1000,
          actor: 'web-controller',
          source: 'web-controller',
          expires_ms: Date.now() + 3_600_000,
          evidence: '{}',
        })
      } finally {
        await d.close()
      }
      const exported = await on(from, 'decision', 'list', '--json', '--limit', '100000')
      assert.equal(exported.code, 0, exported.stderr)
      const file = join(dir.path, `${dialect}-decisions.json`)
      // And a temporary decision that ended since the export: not brought back.
      const ended = {
        scope_type: 'instance',
        scope_id: 'g1',
        fingerprint: fp(6),
        status: 'blocked',
        label: '',
        source: 'manual',
        expires_at: new Date(Date.now() - 60_000).toISOString(),
      }
      writeFileSync(file, JSON.stringify([...JSON.parse(exported.stdout), ended]))

      const to = await newDatabase(dialect, pg.get)
      await seed(to, GATES)
      const dry = await on(to, 'decision', 'import', '--dry-run', file)
      assert.equal(dry.code, 0, dry.stderr)
      assert.equal(
        dry.stdout,
        'would import 4 decisions (1 approved, 2 blocked, 1 pending); 0 already as in the file; skipped 1 automated, 1 already expired\n',
      )
      assert.equal(
        JSON.parse((await on(to, 'decision', 'list', '--json')).stdout).length,
        0,
        'a dry run writes nothing',
      )
      const imported = await on(to, 'decision', 'import', file)
      assert.equal(imported.code, 0, imported.stderr)
      assert.equal(
        imported.stdout,
        'imported 4 decisions (1 approved, 2 blocked, 1 pending); 0 already as in the file; skipped 1 automated, 1 already expired\n',
      )
      const shape = (text: string) =>
        (JSON.parse(text) as Array<Record<string, string>>)
          .filter((x) => x.source === 'manual')
          .map((x) => [x.scope_id, x.fingerprint, x.status, x.label, x.source, x.expires_at ?? '-'].join(' '))
          .sort()
      const moved = await on(to, 'decision', 'list', '--json')
      assert.deepEqual(shape(moved.stdout), shape(exported.stdout))
      const again = await on(to, 'decision', 'import', '--json', file)
      assert.deepEqual(JSON.parse(again.stdout), {
        dry_run: false,
        changed: { approved: 0, blocked: 0, pending: 0 },
        unchanged: 4,
        skipped: { automated: 1, undecided: 0, expired: 1 },
      })
      const audit = await on(to, 'audit', 'list', '--json')
      assert.equal(
        (JSON.parse(audit.stdout) as Array<{ action: string }>).filter((a) => a.action.startsWith('decision.')).length,
        4,
        'each change audited once',
      )
    })

    test("a gate's own list, piped in with --instance; files that cannot be imported change nothing", async () => {
      const database = await newDatabase(dialect, pg.get)
      await seed(database, GATES)
      // A real SSH gate store with two decided entries and an undecided one.
      const { openStore } = await import('../../sshproxy/src/db/index.ts')
      const { recordObservations, setVerdict } = await import('../../sshproxy/src/fingerprints/store.ts')
      const gateDb = join(dir.path, `${dialect}-gate.db`)
      const store = await openStore(gateDb, { create: true })
      const t = new Date().toISOString()
      await recordObservations(
        store.db,
        [5, 6, 7].map((n) => ({
          fingerprint: fp(n),
          identification: 'SSH-2.0-test_1.0',
          clientVersion: 'test_1.0',
          metadata: '{}',
          count: 1,
          enrolled: 0,
          firstSeen: t,
          lastSeen: t,
          sightings: [],
        })),
        100,
        t,
      )
      await setVerdict(store.db, fp(5), { verdict: 'approved', actor: 't', label: 'backup host', now: t })
      // A block the gate's operator made for a while (`sshproxy block --for 2h`) keeps its end.
      const until = new Date(Date.now() + 7_200_000).toISOString()
      await setVerdict(store.db, fp(6), { verdict: 'blocked', actor: 't', now: t, expiresAt: until })
      await store.close()
      const listed = spawnSync(
        NODE,
        [join(APP, '..', 'sshproxy', 'src', 'main.ts'), 'list', '--db', gateDb, '--json'],
        {
          encoding: 'utf8',
        },
      )
      assert.equal(listed.status, 0, listed.stderr)
      const piped = cliWithInput(['decision', 'import', '--instance', 'g1', '--database', database, '-'], listed.stdout)
      assert.equal(piped.code, 0, piped.stderr)
      assert.equal(
        piped.stdout,
        'imported 2 decisions (1 approved, 1 blocked, 0 pending); 0 already as in the file; skipped 1 undecided\n',
      )
      const list = JSON.parse((await cli(['decision', 'list', '--json', '--database', database])).stdout)
      assert.deepEqual(list.map((x: Record<string, string>) => [x.scope_id, x.fingerprint, x.status, x.label]).sort(), [
        ['g1', fp(5), 'approved', 'backup host'],
        ['g1', fp(6), 'blocked', ''],
      ])
      const expiries = new Map(list.map((x: Record<string, string>) => [x.fingerprint, x.expires_at]))
      assert.equal(expiries.get(fp(5)), undefined)
      assert.equal(Date.parse(expiries.get(fp(6)) as string), Date.parse(until))

      // Nothing is written unless every entry can be.
      const bad = async (content: unknown, args: string[], message: RegExp) => {
        const file = join(dir.path, `${dialect}-bad.json`)
        writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content))
        const r = await cli(['decision', 'import', ...args, '--database', database, file])
        assert.equal(r.code, 1, r.stdout)
        assert.match(r.stderr, message)
        assert.match(r.stderr, /nothing was imported\n$/)
        const now = JSON.parse((await cli(['decision', 'list', '--json', '--database', database])).stdout)
        assert.equal(now.length, 2, 'nothing written')
      }
      const good = { scope_id: 'g1', fingerprint: fp(8), status: 'approved', label: '', source: 'manual' }
      await bad([good, good], [], /entry 1: g1\/0+8 appears twice/)
      await bad(
        [good, { ...good, fingerprint: fp(9) }, { ...good, fingerprint: 'not a fingerprint' }],
        [],
        /entry 2: bad fingerprint/,
      )
      await bad([good, { ...good, status: 'maybe' }], [], /entry 1: status \(or verdict\) must be approved/)
      await bad([good, { ...good, scope_id: 'w1', fingerprint: fp(9) }], [], /not registered gates: w1/)
      await bad([good, { ...good, scope_id: 'nope' }], [], /not registered gates: nope/)
      await bad(
        [{ fingerprint: fp(9), verdict: 'approved', decided: true }],
        [],
        /entry 0: no scope_id; a gate's list needs --instance/,
      )
      await bad([good], ['--instance', 'g2'], /entry 0: scope_id g1 is not --instance g2/)
      await bad([{ ...good, label: 'a\u001b[31mred' }], [], /entry 0: /)
      await bad('{"not": "an array"}', [], /expected a JSON array of decisions/)
      await bad('[{', [], /not JSON: /)
      const missing = await cli(['decision', 'import', '--database', database, join(dir.path, 'missing.json')])
      assert.equal(missing.code, 1)
      assert.match(missing.stderr, /cannot read .*missing\.json/)
    })
  })
}
