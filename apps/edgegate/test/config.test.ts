/**
 * `serve`'s configuration reports a bad value and a broken cross-field rule together (the kit's
 * `loadWithChecks`): fixing the one does not reveal the other on the next start. A rule that
 * reads a setting the loader refused is skipped, so that setting is named once. Through the
 * loader (flags, environment, file) and through `edgegate serve` itself.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { ConfigError } from '@gatehouse/kit/config.ts'
import { loadServeConfig } from '../src/config.ts'
import { cli } from './helpers.ts'

const dir = mkdtempSync(join(tmpdir(), 'edgegate-config-'))
after(() => rmSync(dir, { recursive: true, force: true }))
const TLS = { 'tls-cert': '/x.crt', 'tls-key': '/x.key', database: `sqlite:${join(dir, 'e.db')}` }

function lines(fn: () => unknown): string[] {
  try {
    fn()
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err))
    return err.lines
  }
  assert.fail('no ConfigError')
}

test('a bad value and a cross-field conflict are both reported, per-field line first', () => {
  const got = lines(() =>
    loadServeConfig({
      flags: { ...TLS, 'sighting-retention': 'forever', 'web-enforcement-mode': 'canary', 'web-shadow-enabled': true },
      env: {},
    }),
  )
  assert.equal(got.length, 2, got.join('\n'))
  assert.match(got[0]!, /sighting-retention/)
  assert.equal(got[1], 'web_enforcement_canary_nodes: canary mode needs at least one TLS gate instance id')
})

test('each cross-field rule runs beside bad values: every problem at once, from the environment and the file', () => {
  const file = join(dir, 'edgegate.json')
  writeFileSync(file, JSON.stringify({ fingerprint_retention: '1h', web_shadow_min_signals: 0 }))
  const got = lines(() =>
    loadServeConfig({
      flags: TLS,
      config: file,
      env: {
        EDGEGATE_LISTEN: 'nowhere',
        EDGEGATE_WEB_ENFORCEMENT_MODE: 'enforce',
        EDGEGATE_ALERT_URL: 'http://alerts.example.net/hooks/t',
        EDGEGATE_AUDIT_RETENTION: '1h',
      },
    }),
  )
  assert.equal(got.length, 6, got.join('\n'))
  assert.match(got.slice(0, 2).join('\n'), /EDGEGATE_LISTEN|listen/)
  assert.match(got.slice(0, 2).join('\n'), /web_shadow_min_signals/)
  assert.deepEqual(got.slice(2), [
    'web_enforcement_mode: enforce needs --web-shadow-enabled (the controller blocks what the shadow policy scores would_block)',
    'audit_retention: at least 24h, or 0 to keep every entry',
    'fingerprint_retention: at least 24h, or 0 to keep undecided aggregates',
    'alert_url: plain http only on loopback (the URL carries the hook token)',
  ])
})

test('a rule over a refused setting is skipped: the setting is named once, by the loader', () => {
  const got = lines(() =>
    loadServeConfig({
      flags: { ...TLS, 'web-enforcement-mode': 'block', 'web-enforcement-canary-nodes': ['tls-1'] },
      env: {},
    }),
  )
  assert.equal(got.length, 1, got.join('\n'))
  assert.match(got[0]!, /must be one of disabled, canary, enforce/)
  // Only cross-field problems: they are still all there, and a good config loads.
  assert.equal(lines(() => loadServeConfig({ flags: { ...TLS, 'web-enforcement-mode': 'canary' }, env: {} })).length, 2)
  const ok = loadServeConfig({
    flags: {
      ...TLS,
      'web-enforcement-mode': 'canary',
      'web-shadow-enabled': true,
      'web-enforcement-canary-nodes': ['tls-1'],
    },
    env: {},
  })
  assert.deepEqual(ok.config.web_enforcement_canary_nodes, ['tls-1'])
})

test('edgegate serve prints both lines and exits 1 before it opens anything', async () => {
  const r = await cli(
    [
      'serve',
      '--database',
      TLS.database,
      '--tls-cert',
      '/x.crt',
      '--tls-key',
      '/x.key',
      '--policy-page-size',
      '0',
      '--web-enforcement-mode',
      'enforce',
    ],
    { EDGEGATE_CONFIG: '' },
  )
  assert.equal(r.code, 1, r.stderr)
  const out = r.stderr.trim().split('\n')
  assert.equal(out.length, 2, r.stderr)
  assert.match(out[0]!, /^edgegate: .*policy.page.size/)
  assert.match(out[1]!, /^edgegate: web_enforcement_mode: enforce needs --web-shadow-enabled/)
})
