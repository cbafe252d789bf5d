import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DECISION_EXPIRY_MS, parseDecisionExpiry } from '../src/edge-limits.ts'
import { type GateEntry, toObservation } from '../src/gate-observation.ts'
import { gateStatusOf, verdictText } from '../src/gate-verdict.ts'

const until = '2026-12-01T10:00:00.123456Z'
const at = (offsetMs: number) => Date.parse(until) + offsetMs

test('a verdict applies until its expiry, then counts as pending; undecided entries are unknown', () => {
  const blocked = { verdict: 'blocked', decided_at: '2026-12-01T09:00:00Z', expires_at: until } as const
  assert.equal(gateStatusOf(blocked, at(-1)), 'blocked')
  assert.equal(gateStatusOf(blocked, at(0)), 'pending', 'at the expiry it has ended')
  assert.equal(gateStatusOf({ ...blocked, verdict: 'approved' }, at(1)), 'pending')
  assert.equal(gateStatusOf({ ...blocked, expires_at: null }, at(1e12)), 'blocked')
  assert.equal(gateStatusOf({ verdict: 'pending', decided_at: null, expires_at: null }, 0), 'unknown')
  assert.equal(gateStatusOf(undefined, 0), 'unknown')
})

test('verdictText says until when, and that it expired', () => {
  const row = { verdict: 'blocked', decided_at: '2026-12-01T09:00:00Z', expires_at: until } as const
  assert.equal(verdictText(row, at(-1)), `blocked until ${until}`)
  assert.equal(verdictText(row, at(1)), 'pending (expired)')
  assert.equal(verdictText({ ...row, expires_at: null }), 'blocked')
  assert.equal(verdictText({ verdict: 'pending', decided_at: null, expires_at: null }), 'new')
})

test('an upload reports an expired verdict as pending, as the gate applies it', () => {
  const entry: GateEntry = {
    fingerprint: 'f'.repeat(32),
    verdict: 'blocked',
    decided_at: '2026-12-01T09:00:00Z',
    expires_at: new Date(Date.now() - 1000).toISOString(),
    first_seen: '2026-12-01T09:00:00Z',
    last_seen: '2026-12-01T09:00:00Z',
    count: 1,
    ips: [],
    ports: [],
    sightings: [],
    metadata: {},
  }
  assert.equal(toObservation(entry).status, 'pending')
  assert.equal(toObservation({ ...entry, expires_at: new Date(Date.now() + 60_000).toISOString() }).status, 'blocked')
  assert.equal(toObservation({ ...entry, verdict: 'pending', decided_at: null, expires_at: null }).status, 'unknown')
})

test('a decision lasts from a minute to a year: anything else is refused', () => {
  assert.equal(parseDecisionExpiry('1m'), DECISION_EXPIRY_MS.min)
  assert.equal(parseDecisionExpiry('8760h'), DECISION_EXPIRY_MS.max)
  assert.equal(parseDecisionExpiry('1h30m'), 5_400_000)
  for (const bad of ['59s', '8761h', '0', '', 'soon', '-1h', '4 h'])
    assert.equal(parseDecisionExpiry(bad), undefined, bad)
})
