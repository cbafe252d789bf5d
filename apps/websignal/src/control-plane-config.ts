/**
 * websignal's `control_plane` section (spec, Authentication 1-2): its settings, their rules (HTTPS
 * only, instance_id with url, exactly one auth method) and the bearer token, which SIGHUP or a
 * batch refused for its credentials reads again from where it came from.
 */
import {
  ConfigError,
  type ConfigOf,
  field,
  loadConfig,
  SECRET_NOT_READ,
  secretExposure,
} from '@gatehouse/kit/config.ts'
import type { ControlPlaneTarget } from '@gatehouse/kit/control-plane-client.ts'
import { controlPlaneTarget } from '@gatehouse/kit/control-plane-config.ts'
import { INSTANCE_ID_PATTERN } from '@gatehouse/kit/edge-limits.ts'
// Not `node:fs`: its ES module facade loads the stream classes into every `--help`.
import { readFileSync } from '@gatehouse/kit/startup-builtins.ts'

export const controlPlaneSchema = {
  url: field.url({
    protocols: ['https:'],
    doc: 'control-plane base URL (HTTPS only); omit to run without publishing',
  }),
  instance_id: field.string({
    pattern: new RegExp(INSTANCE_ID_PATTERN),
    patternDoc: 'a node instance id',
    doc: 'the websignal node id',
  }),
  token: field.string({ secret: true, env: 'WEBSIGNAL_CONTROL_PLANE_TOKEN', minLength: 1, doc: 'bearer token' }),
  client_cert: field.string({ minLength: 1 }),
  client_key: field.string({ minLength: 1 }),
  ca: field.string({ minLength: 1 }),
  server_name: field.string({ minLength: 1 }),
  publish_interval: field.duration({ default: '1s', min: '50ms', max: '1m' }),
  lease_ttl: field.duration({ default: '10s', min: '1s', max: '5m' }),
  outbox_max: field.int({ default: 100_000, min: 1 }),
  batch_size: field.int({ default: 500, min: 1, max: 500 }),
}

export interface ControlPlane extends ControlPlaneTarget {
  publishIntervalMs: number
  leaseTtlMs: number
  outboxMax: number
  batchSize: number
  /**
   * With a bearer token: reads it again from where it came from (SIGHUP, or a batch refused for
   * its credentials), with the environment the config was loaded with. Throws, with the reason,
   * when it cannot be read or is not a token.
   */
  readToken?: () => TokenRead
}

export interface TokenRead {
  token: string
  /** Where it was read: the token file, the config file, or `$WEBSIGNAL_CONTROL_PLANE_TOKEN`. */
  from: string
  /** From `$WEBSIGNAL_CONTROL_PLANE_TOKEN`: a running process is never given it anew. */
  fixed: boolean
  /** A token file every user of the host may read. */
  warnings: string[]
}

export function keyWarning(cp: ControlPlane | undefined): string[] {
  if (cp?.auth.kind !== 'mtls') return []
  const exposed = secretExposure(cp.auth.clientKey, 'the control-plane client key (control_plane.client_key)')
  return exposed ? [exposed] : []
}

/** Spec, Authentication 1-2: HTTPS only, instance_id with url, exactly one auth method. */
export function checkControlPlane(
  cp: ConfigOf<typeof controlPlaneSchema>,
  sources: Record<string, string>,
  invalid: ReadonlySet<string>,
  errors: string[],
): ControlPlane | undefined {
  const given = [
    ...Object.keys(sources).filter((k) => k.startsWith('control_plane.') && sources[k] !== 'default'),
    ...[...invalid].filter((k) => k.startsWith('control_plane.')),
  ]
  // A setting given with a bad value counts as given; its value is not read.
  const has = (key: keyof typeof cp) => cp[key] !== undefined || invalid.has(`control_plane.${key}`)
  if (cp.url === undefined) {
    if (given.length > 0 && !invalid.has('control_plane.url'))
      errors.push(`control_plane.url: required when control_plane is configured (${given.join(', ')} set)`)
    return undefined
  }
  const u = new URL(cp.url)
  if (u.username || u.password || u.search || u.hash) {
    errors.push('control_plane.url: must be a plain base URL (no credentials, query or fragment)')
  }
  if (!has('instance_id')) errors.push('control_plane.instance_id: required when control_plane.url is set')
  const anyMtls = has('client_cert') || has('client_key')
  const badToken = cp.token === undefined || cp.token === SECRET_NOT_READ ? undefined : tokenProblem(cp.token)
  if (badToken) errors.push(`control_plane.token: ${badToken}`)
  if (has('token') && anyMtls) {
    errors.push('control_plane: configure exactly one auth method: token, or client_cert + client_key + ca (not both)')
  } else if (!has('token') && !anyMtls) {
    errors.push(
      'control_plane: an auth method is required: token (or WEBSIGNAL_CONTROL_PLANE_TOKEN_FILE), or client_cert + client_key + ca',
    )
  } else if (anyMtls && !(has('client_cert') && has('client_key') && has('ca'))) {
    errors.push('control_plane: mutual TLS needs client_cert, client_key and ca')
  }
  if (errors.length > 0 || invalid.size > 0 || cp.instance_id === undefined) return undefined
  return {
    ...controlPlaneTarget({ ...cp, url: cp.url, instance_id: cp.instance_id }),
    publishIntervalMs: cp.publish_interval,
    leaseTtlMs: cp.lease_ttl,
    outboxMax: cp.outbox_max,
    batchSize: cp.batch_size,
  }
}

const TOKEN_ENV = 'WEBSIGNAL_CONTROL_PLANE_TOKEN'

/**
 * What no bearer token holds (RFC 6750's b64token is visible ASCII): a second line or a stray
 * space in the token file would otherwise show up only as a refused batch, or as undici's
 * complaint about a header. Never echoes the token.
 */
function tokenProblem(token: string): string | undefined {
  if (/^[\x21-\x7e]+$/.test(token)) return undefined
  return 'holds a space, a line break, a control or a non-ASCII character, which no bearer token has (the file must hold the token alone, one trailing newline allowed)'
}

/**
 * The control-plane token as the configuration gives it now: `$WEBSIGNAL_CONTROL_PLANE_TOKEN`,
 * else the file of `$WEBSIGNAL_CONTROL_PLANE_TOKEN_FILE`, else the config file's
 * `control_plane.token` or `token_file`, read by the same rules as at start (one trailing
 * newline dropped). Only this key of the config file is taken: other settings need a restart.
 */
export function readControlPlaneToken(path: string, env: Record<string, string | undefined> = process.env): TokenRead {
  let loaded: ReturnType<typeof loadConfig<{ control_plane: { token: typeof controlPlaneSchema.token } }>>
  try {
    loaded = loadConfig(
      { control_plane: { token: controlPlaneSchema.token } },
      { file: path, env, ignoreUnknownFileKeys: true },
    )
  } catch (err) {
    if (err instanceof ConfigError) throw new Error(err.lines.join('; '))
    throw err
  }
  const token = loaded.config.control_plane.token
  const from =
    env[TOKEN_ENV] !== undefined
      ? `$${TOKEN_ENV}`
      : (env[`${TOKEN_ENV}_FILE`] ?? tokenFileOf(path) ?? `control_plane.token in ${path}`)
  if (token === undefined) {
    throw new Error(
      `no control-plane token is configured any more (control_plane.token, token_file or $${TOKEN_ENV}_FILE); to authenticate another way, restart`,
    )
  }
  const problem = tokenProblem(token)
  if (problem) throw new Error(`the token in ${from} ${problem}`)
  return { token, from, fixed: env[TOKEN_ENV] !== undefined, warnings: loaded.warnings }
}

/** The config file's `control_plane.token_file`, to name it in the log (the loader read it already). */
function tokenFileOf(path: string): string | undefined {
  try {
    const file = JSON.parse(readFileSync(path, 'utf8')) as { control_plane?: { token_file?: unknown } }
    const p = file.control_plane?.token_file
    return typeof p === 'string' ? p : undefined
  } catch {
    return undefined
  }
}
