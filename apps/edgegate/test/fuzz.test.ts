/**
 * Outside input over HTTP: any body on the node endpoints gets a coded 2xx/4xx answer,
 * never a 5xx, and a refused body stores nothing.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { call, type Edgegate, type Json, makeTls, newDatabase, observation, seed, startEdgegate } from './helpers.ts'

const tls = makeTls()

/** A valid body with one field somewhere replaced by arbitrary JSON (or removed). */
function mutate(valid: Record<string, unknown>): fc.Arbitrary<unknown> {
  const paths: string[][] = []
  const walk = (v: unknown, path: string[]) => {
    paths.push(path)
    if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, [...path, k])
  }
  walk(valid, [])
  return fc
    .tuple(fc.constantFrom(...paths.filter((p) => p.length > 0)), fc.option(fc.jsonValue(), { nil: undefined }))
    .map(([path, value]) => {
      const copy = structuredClone(valid) as Record<string, unknown>
      let at: Record<string, unknown> = copy
      for (const k of path.slice(0, -1)) at = at[k] as Record<string, unknown>
      if (value === undefined) delete at[path.at(-1)!]
      else at[path.at(-1)!] = value
      return copy
    })
}

describe('HTTP fuzzing of the node endpoints', () => {
  let gate: Edgegate
  let tokens: Record<string, string>
  let admin: string

  before(async () => {
    const database = await newDatabase('sqlite', async () => {
      throw new Error('unused')
    })
    ;({ tokens, admin } = await seed(database, [
      { id: 'ssh', kind: 'sshgate' },
      { id: 'web', kind: 'websignal' },
      { id: 'tls', kind: 'tlsgate' },
    ]))
    gate = await startEdgegate(database, tls)
  })
  after(async () => {
    await gate?.stop()
    tls.ca.remove()
  })

  const endpoints = () => [
    {
      path: '/v1/observations/batch?instance_id=ssh',
      token: tokens.ssh!,
      valid: { instance_id: 'ssh', observations: [observation('f'.repeat(32))] },
    },
    {
      path: '/v1/signals/batch?instance_id=web',
      token: tokens.web!,
      valid: {
        instance_id: 'web',
        signals: [
          {
            event_id: 'e-1',
            observed_at: new Date().toISOString(),
            host: 'www.example.test',
            site: 'www',
            ip: '203.0.113.5',
            trigger: 'suspicious_uri',
            connections: 1,
            errors: 1,
            successes: 0,
            window_seconds: 60,
          },
        ],
      },
    },
    {
      path: '/v1/smtp/reports?instance_id=tls',
      token: tokens.tls!,
      valid: {
        instance_id: 'tls',
        namespace: 'mx',
        listener: '0.0.0.0:25',
        coverage: { from: '2026-11-22T05:00:00Z', to: '2026-11-22T06:00:00Z' },
        generated_at: '2026-11-22T06:00:00Z',
        replay_id: 'fuzzfuzzfuzzfuzz',
        counts: { sessions: 1 },
        evidence: [{ kind: 'x', count: 1 }],
      },
    },
  ]

  test('mutated and arbitrary bodies: never a 5xx, always a coded error when refused', async () => {
    for (const e of endpoints()) {
      await fc.assert(
        fc.asyncProperty(fc.oneof(mutate(e.valid), fc.jsonValue()), async (body) => {
          const res = await call(tls, gate.base, e.path, {
            method: 'POST',
            raw: JSON.stringify(body) ?? 'null',
            token: e.token,
          })
          assert.ok(res.status < 500, `${e.path} answered ${res.status}: ${JSON.stringify(res.body)}`)
          if (res.status >= 400) {
            assert.equal(typeof res.body.error.code, 'string')
            assert.equal(typeof res.body.error.message, 'string')
          }
        }),
        { numRuns: 60 },
      )
    }
    // Whatever was accepted is well-formed when read back.
    const fps = (await call(tls, gate.base, '/api/fingerprints?limit=1000', { token: admin })).body
      .fingerprints as Json[]
    for (const f of fps) {
      assert.ok(f.ips.length <= 128 && f.sightings.length <= 128)
      assert.ok(!Number.isNaN(Date.parse(f.first_seen)))
    }
  })
})
