/**
 * sshd log lines for `correlate`: timestamps (syslog and RFC 3339), exact address matching
 * (never substring), the window, the gate-side relay port, and a fast-check property that any
 * text parses without throwing.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { tempDir } from '@gatehouse/testkit'
import fc from 'fast-check'
import { parseLogLine } from '../src/correlate/log-lines.ts'
import { correlate, type Match } from '../src/correlate/service.ts'

const dir = tempDir('sshproxy-correlate-')
after(() => dir.remove())
const REF = Date.parse('2026-11-22T06:00:00Z')

test('syslog and RFC 3339 timestamps; the first address with a port', () => {
  const a = parseLogLine('Nov 22 06:01:02 host sshd[9]: Accepted publickey for root from 10.0.0.1 port 5555 ssh2', REF)
  assert.deepEqual(a, { time: Date.parse('2026-11-22T06:01:02Z'), ip: '10.0.0.1', port: 5555 })
  const b = parseLogLine(
    '2026-11-22T07:01:02.123456+01:00 host sshd[9]: Connection from 2001:db8::1 port 22 on 10.0.0.2 port 22',
    REF,
  )
  assert.deepEqual(b, { time: Date.parse('2026-11-22T06:01:02.123Z'), ip: '2001:db8::1', port: 22 })
  const c = parseLogLine(
    '2026-11-22T06:01:02+0000 host sshd[9]: Disconnected from user root ::ffff:10.0.0.3 port 7',
    REF,
  )
  assert.deepEqual(c, { time: Date.parse('2026-11-22T06:01:02Z'), ip: '10.0.0.3', port: 7 })
  // December lines read in January belong to the previous year.
  const d = parseLogLine(
    'Dec 31 23:59:59 h sshd[1]: Connection closed by 10.0.0.4 port 1 [preauth]',
    Date.parse('2027-01-01T00:10:00Z'),
  )
  assert.equal(d?.time, Date.parse('2026-12-31T23:59:59Z'))
  assert.equal(parseLogLine('no timestamp from 10.0.0.1 port 5', REF), undefined)
  assert.equal(parseLogLine('Nov 22 06:01:02 host sshd[9]: Server listening on 0.0.0.0 port 22', REF)?.ip, '0.0.0.0')
  assert.equal(parseLogLine('Feb 30 06:01:02 h sshd[1]: from 10.0.0.1 port 1', REF), undefined)
})

test('matches exact client IPs within the window, and relay ports of the gate', async () => {
  const log = join(dir.path, 'auth.log')
  writeFileSync(
    log,
    [
      'Nov 22 06:00:30 h sshd[1]: Accepted publickey for a from 10.0.0.1 port 40000 ssh2',
      'Nov 22 06:00:31 h sshd[2]: Accepted publickey for a from 10.0.0.11 port 40001 ssh2',
      'Nov 22 06:00:32 h sshd[3]: Accepted publickey for a from 110.0.0.1 port 40002 ssh2',
      'Nov 22 05:40:00 h sshd[4]: Accepted publickey for a from 10.0.0.1 port 40003 ssh2',
      'Nov 22 06:00:40 h sshd[5]: Accepted publickey for a from 127.0.0.1 port 51000 ssh2',
      'Nov 22 06:00:41 h sshd[6]: Accepted publickey for a from 127.0.0.1 port 51001 ssh2',
      'Nov 22 06:00:42 h sshd[7]: Accepted publickey for a from 127.0.0.2 port 51000 ssh2',
      'garbage line',
    ].join('\n'),
  )
  const matches: Match[] = []
  const r = await correlate(
    {
      first_seen: '2026-11-22T06:00:00.000Z',
      last_seen: '2026-11-22T06:01:00.000Z',
      ips: ['10.0.0.1', '192.0.2.9'],
      sightings: [
        {
          ip: '192.0.2.9',
          port: 33333,
          last_seen: '2026-11-22T06:00:40.000Z',
          relay_port: 51000,
          relay_ip: '127.0.0.1',
        },
      ],
    },
    log,
    5 * 60_000,
    (m) => matches.push(m),
  )
  assert.deepEqual(r, { lines: 8, matches: 2 })
  assert.equal(matches[0]!.kind, 'client_ip')
  assert.match(matches[0]!.line, /port 40000/)
  assert.deepEqual(matches[1], {
    kind: 'relay_port',
    line: 'Nov 22 06:00:40 h sshd[5]: Accepted publickey for a from 127.0.0.1 port 51000 ssh2',
    relayPort: 51000,
    client: { ip: '192.0.2.9', port: 33333 },
  })
})

test('any text line parses without throwing', () => {
  const prefix = fc.constantFrom('', 'Nov 22 06:01:02 h sshd[1]: ', '2026-11-22T06:01:02Z h sshd[1]: ')
  fc.assert(
    fc.property(prefix, fc.string({ maxLength: 400 }), fc.string({ unit: 'binary', maxLength: 200 }), (p, a, b) => {
      const r = parseLogLine(`${p}${a} port ${b}`, REF)
      if (r) {
        assert.ok(Number.isFinite(r.time))
        assert.ok(r.port >= 0 && r.port <= 65535)
      }
    }),
    { numRuns: 1000 },
  )
  assert.equal(parseLogLine(`Nov 22 06:01:02 h ${'x'.repeat(10_000)} 10.0.0.1 port 5`, REF), undefined)
})
