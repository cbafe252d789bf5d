/**
 * Audit retention (--audit-retention, audit/store.ts): events past it go, a batch at a time,
 * except the newest committed publication, whose time the HA status reports.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { openDatabase } from '@gatehouse/kit'
import { tempDir, waitFor } from '@gatehouse/testkit'
import { appendAudit, listAudit, removeAuditBefore } from '../src/audit/store.ts'
import { migrations } from '../src/db/migrations/index.ts'
import type { DB, NewAuditEvent } from '../src/db/schema.ts'
import { lastPublicationAt } from '../src/ha/store.ts'
import { json, startHarness, ZONE, zoneText } from './helpers.ts'

const DAY_MS = 86_400_000

function event(daysAgo: number, outcome: NewAuditEvent['outcome'], zone = 'example.test.'): NewAuditEvent {
  return {
    at: new Date(Date.now() - daysAgo * DAY_MS).toISOString(),
    zone,
    action: 'change',
    actor: 'local',
    request_id: `r-${daysAgo}-${outcome}`,
    before_revision: null,
    after_revision: null,
    outcome,
    detail: '{}',
  }
}

test('events past the retention go, the newest publication stays, recent ones stay', async (t) => {
  const dir = tempDir('dnsctl-audit-')
  t.after(() => dir.remove())
  const database = await openDatabase<DB>({ url: `sqlite:${dir.path}/dnsctl.db`, migrations })
  t.after(() => database.close())
  const db = database.db
  // Well over a year ago: 2,500 events (more than one batch of the delete).
  for (let i = 0; i < 2500; i++) await appendAudit(db, event(500 - i / 100, i % 2 === 0 ? 'rolled_back' : 'committed'))
  // Then the newest publication, 400 days ago, and a failed change after it.
  const published = event(400, 'committed', 'other.test.')
  await appendAudit(db, published)
  await appendAudit(db, event(399, 'aborted', 'other.test.'))
  assert.equal(await lastPublicationAt(db), published.at)
  const cutoff = Date.now() - 365 * DAY_MS
  // Everything before the newest publication goes; it and what follows it stay.
  assert.equal(await removeAuditBefore(db, cutoff), 2500)
  assert.deepEqual(
    (await listAudit(db, 'other.test.', { limit: 10 })).map((e) => e.outcome),
    ['aborted', 'committed'],
  )
  assert.deepEqual(await listAudit(db, 'example.test.', { limit: 10 }), [])
  assert.equal(await lastPublicationAt(db), published.at)
  // A newer publication: the old one goes too; recent events stay.
  const recent = event(1, 'committed')
  await appendAudit(db, recent)
  await appendAudit(db, event(0, 'aborted'))
  assert.equal(await removeAuditBefore(db, cutoff), 2)
  assert.deepEqual(
    (await listAudit(db, 'example.test.', { limit: 10 })).map((e) => e.outcome),
    ['aborted', 'committed'],
  )
  assert.equal(await lastPublicationAt(db), recent.at)
  assert.equal(await removeAuditBefore(db, cutoff), 0)
})

test('the server removes old events on its own with --audit-retention', async (t) => {
  const h = await startHarness({ env: { DNSCTL_AUDIT_RETENTION: '24h' }, auditSweepIntervalMs: 100 })
  t.after(() => h.close())
  // Events are appended in time order: a month-old history first, then today's changes.
  for (let i = 0; i < 5; i++) await appendAudit(h.db, event(34 - i, 'committed', `${ZONE}.`))
  const created = await h.call('PUT', `/v1/zones/${ZONE}`, { role: 'primary', zone_text: zoneText(1) })
  assert.equal(created.status, 201)
  const revision = (await json(created)).revision as string
  const change = await h.call(
    'POST',
    `/v1/zones/${ZONE}/changes`,
    { changes: [{ action: 'upsert', name: 'www', type: 'A', ttl: 300, records: ['192.0.2.7'] }] },
    { 'if-match': `"${revision}"` },
  )
  assert.equal(change.status, 200)
  const audit = async () => (await json(await h.call('GET', `/v1/zones/${ZONE}/audit`))).events as Array<{ at: string }>
  await waitFor('the old events removed', async () => (await audit()).length === 2)
  for (const e of await audit())
    assert.ok(Date.parse(e.at) > Date.now() - 60_000, 'the create and the change just made stay')
})
