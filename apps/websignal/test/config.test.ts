/** The config's cross-field rules run with the per-field checks: every problem is named at once. */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { test } from 'node:test'
import { ConfigError } from '@gatehouse/kit/config.ts'
import { writeConfig } from './helpers.ts'

const INPUTS = [{ path: '/var/log/nginx/access.log', format: 'combined', site: 'main' }]

/** The lines of the ConfigError loading `obj` throws. */
function problems(obj: Record<string, unknown>, env: Record<string, string> = {}): string[] {
  const c = writeConfig(obj, env)
  try {
    c.load()
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err))
    return err.lines
  } finally {
    c.dir.remove()
  }
  assert.fail('the config loaded')
}

test('one bad field and one cross-field conflict: both are named, the field first', () => {
  assert.deepEqual(problems({ inputs: INPUTS, window: 'soon', store: { sentinel_name: 'mymaster' } }), [
    'window: invalid duration "soon" (use e.g. 500ms, 30s, 15m, 12h, 1h30m)',
    'store: sentinels and sentinel_name go together',
  ])
  // The same with the control plane's rules: two auth methods, beside a bad publish interval.
  assert.deepEqual(
    problems({
      inputs: INPUTS,
      control_plane: {
        url: 'https://cp.example.test',
        instance_id: 'web-1',
        token: 'node-token',
        client_cert: '/etc/websignal/client.crt',
        publish_interval: '0s',
      },
    }),
    [
      'control_plane.publish_interval: must be at least 50ms',
      'control_plane: configure exactly one auth method: token, or client_cert + client_key + ca (not both)',
    ],
  )
  // And with analytics: output file without its file, beside an unknown key; the listen address,
  // checked after the fields, is named too.
  assert.deepEqual(
    problems({
      inputs: INPUTS,
      listne: '127.0.0.1:9466',
      listen: 'nowhere',
      analytics: { output: 'file', secret: 'a-visitor-hash-secret-0123' },
    }),
    [
      'listne: unknown key',
      'listen: invalid listen address "nowhere" (use host:port or [v6]:port)',
      'analytics.file: required with output file',
    ],
  )
})

test('a setting given with a bad value counts as given: no second line calls it missing', () => {
  // A control-plane URL that is not https: not also "required when control_plane is configured".
  assert.deepEqual(
    problems({ inputs: INPUTS, control_plane: { url: 'http://cp.example.test', instance_id: 'web-1' } }),
    ['control_plane.url: must use https, got http'],
  )
  // A token file that cannot be read is a token given: not also "an auth method is required".
  assert.deepEqual(
    problems(
      { inputs: INPUTS, control_plane: { url: 'https://cp.example.test', instance_id: 'web-1' } },
      { WEBSIGNAL_CONTROL_PLANE_TOKEN_FILE: '/nonexistent/token' },
    ),
    ['WEBSIGNAL_CONTROL_PLANE_TOKEN_FILE: secret file /nonexistent/token cannot be read (ENOENT)'],
  )
  // A bad instance id and a bad analytics secret: not also "required".
  assert.deepEqual(
    problems({
      inputs: INPUTS,
      control_plane: { url: 'https://cp.example.test', instance_id: 'web 1', token: 'node-token' },
      analytics: { output: 'file', file: '/var/lib/websignal/a.jsonl', secret: 'short' },
    }),
    [
      'control_plane.instance_id: must be a node instance id, got "web 1"',
      'analytics.secret: must be at least 16 characters',
    ],
  )
  // A bad sentinel list is a list given: it still needs its master name.
  assert.deepEqual(problems({ inputs: INPUTS, store: { sentinels: 'redis-a:26379' } }), [
    'store.sentinels: must be an array of strings, got string "redis-a:26379"',
    'store: sentinels and sentinel_name go together',
  ])
})

test('a config file that cannot be parsed is still the one problem named', () => {
  const c = writeConfig({ inputs: INPUTS })
  try {
    writeFileSync(c.path, '{"inputs": [')
    assert.throws(
      c.load,
      (err) => err instanceof ConfigError && err.lines.length === 1 && /invalid JSON/.test(err.lines[0]!),
    )
  } finally {
    c.dir.remove()
  }
})
