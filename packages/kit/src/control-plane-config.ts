/**
 * The `control_plane` section of a gate's JSON config (spec edge-gate.md, "SSH gate
 * configuration file" and Authentication 1-2), as schema fields and a cross-check that turns
 * it into a `SyncControlPlane`: HTTPS only, instance_id with url, exactly one auth method.
 *
 * @example
 * const fileSchema = { control_plane: controlPlaneFields('TLSGATE') }
 * const file = loadConfig(fileSchema, { file })
 * const cp = readControlPlaneSection(file.config.control_plane, file.sources, errors) // undefined: sync off
 */
import { field } from './config-fields.ts'
import type { ControlPlaneTarget } from './control-plane-client.ts'
import type { SyncControlPlane } from './gate-sync.ts'

/** The section's fields; the token may come from `<PREFIX>_CONTROL_PLANE_TOKEN` or `..._FILE`. */
export function controlPlaneFields(envPrefix: string) {
  return {
    url: field.url({ protocols: ['https:'], doc: 'control-plane base URL (HTTPS only); omit to disable sync' }),
    instance_id: field.string({ minLength: 1, doc: 'stable name of this gate instance (required with url)' }),
    token: field.string({
      secret: true,
      env: `${envPrefix}_CONTROL_PLANE_TOKEN`,
      minLength: 1,
      doc: 'bearer token',
    }),
    client_cert: field.string({ minLength: 1, doc: 'mTLS client certificate path' }),
    client_key: field.string({ minLength: 1, doc: 'mTLS client key path' }),
    ca: field.string({ minLength: 1, doc: 'CA bundle verifying the control plane' }),
    server_name: field.string({ minLength: 1, doc: 'TLS server name when URL host and certificate differ' }),
    // At most 5 minutes: edgegate calls a gate silent after 10 minutes without a word from it.
    sync_interval: field.duration({ default: '30s', min: '1s', max: '5m', doc: 'how often to sync (at most 5m)' }),
  }
}

export interface ControlPlaneSection {
  url?: string | undefined
  instance_id?: string | undefined
  token?: string | undefined
  client_cert?: string | undefined
  client_key?: string | undefined
  ca?: string | undefined
  server_name?: string | undefined
  sync_interval: number
}

/**
 * Cross-check the loaded section; problems are appended to `errors` (one line each, naming the
 * key). `sources` are the loader's sources (`control_plane.token` → `file`, ...). Returns
 * undefined when sync is off or the section is wrong.
 */
export function readControlPlaneSection(
  cp: ControlPlaneSection,
  sources: Record<string, string>,
  errors: string[],
  /** `false` (a command that only names the control plane, `status`): no auth method is no error, and no sync. */
  needAuth = true,
  /**
   * Settings whose value the loader refused (`ConfigError.partial`): each counts as given, and
   * no rule names it again.
   */
  invalid: ReadonlySet<string> = new Set(),
): (SyncControlPlane & { syncIntervalMs: number }) | undefined {
  const refused = (key: string) => invalid.has(`control_plane.${key}`)
  const given = [
    ...new Set([
      ...Object.keys(sources).filter((k) => k.startsWith('control_plane.') && sources[k] !== 'default'),
      ...[...invalid].filter((k) => k.startsWith('control_plane.')),
    ]),
  ]
  if (cp.url === undefined && !refused('url')) {
    if (given.length > 0) {
      errors.push(
        `control_plane.url: required when control_plane is configured (${given.join(', ')} set); omit the section to disable sync`,
      )
    }
    return undefined
  }
  const before = errors.length
  if (cp.url !== undefined) {
    const u = new URL(cp.url)
    if (u.username || u.password) errors.push('control_plane.url: must not carry credentials (use token or mTLS)')
    if (u.search || u.hash) errors.push('control_plane.url: must be a base URL without query or fragment')
  }
  if (cp.instance_id === undefined && !refused('instance_id'))
    errors.push('control_plane.instance_id: required when control_plane.url is set')
  const has = (key: 'token' | 'client_cert' | 'client_key' | 'ca') => cp[key] !== undefined || refused(key)
  const anyMtls = has('client_cert') || has('client_key')
  if (has('token') && anyMtls) {
    errors.push('control_plane: configure exactly one auth method: token, or client_cert + client_key + ca (not both)')
  } else if (!has('token') && !anyMtls) {
    if (needAuth) errors.push('control_plane: an auth method is required: token, or client_cert + client_key + ca')
    else return undefined
  } else if (anyMtls) {
    const missing = (['client_cert', 'client_key', 'ca'] as const).filter((k) => !has(k))
    if (missing.length > 0) {
      errors.push(`control_plane: mutual TLS needs client_cert, client_key and ca (missing ${missing.join(', ')})`)
    }
  }
  const anyRefused = [...invalid].some((k) => k.startsWith('control_plane.'))
  if (errors.length > before || cp.url === undefined || cp.instance_id === undefined || anyRefused) return undefined
  return {
    ...controlPlaneTarget({ ...cp, url: cp.url, instance_id: cp.instance_id }),
    syncIntervalMs: cp.sync_interval,
  }
}

/**
 * The target of a `control_plane` section whose rules passed (url and instance_id set, a token
 * or all three mTLS files): websignal's section builds its target the same way.
 */
export function controlPlaneTarget(cp: {
  url: string
  instance_id: string
  token?: string | undefined
  client_cert?: string | undefined
  client_key?: string | undefined
  ca?: string | undefined
  server_name?: string | undefined
}): ControlPlaneTarget {
  return {
    url: cp.url.replace(/\/+$/, ''),
    instanceId: cp.instance_id,
    auth:
      cp.token !== undefined
        ? { kind: 'token', token: cp.token, ...(cp.ca ? { ca: cp.ca } : {}) }
        : { kind: 'mtls', clientCert: cp.client_cert!, clientKey: cp.client_key!, ca: cp.ca! },
    ...(cp.server_name ? { serverName: cp.server_name } : {}),
  }
}
