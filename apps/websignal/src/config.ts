/**
 * websignal's configuration: a strict JSON file (an unknown or bad field stops startup with
 * one line naming it) plus `--config` / `WEBSIGNAL_CONFIG`. Secrets (control-plane token,
 * analytics token and secret) may come from files through `*_FILE` environment variables or
 * `<key>_file` in the JSON file; a missing or unreadable file stops startup. The only file
 * that reads `process.env`.
 */
import { hostname } from 'node:os'
import { CONFIG_DIR } from '@gatehouse/kit/cli/config-file.ts'
import { ConfigError, field, loadConfig, loadWithChecks } from '@gatehouse/kit/config.ts'
import { type ListenAddress, parseListenAddress } from '@gatehouse/kit/net.ts'
import {
  type ControlPlane,
  checkControlPlane,
  controlPlaneSchema,
  keyWarning,
  readControlPlaneToken,
} from './control-plane-config.ts'
import { DEFAULT_THRESHOLDS, type Thresholds } from './detect/thresholds.ts'
import { DEFAULT_JSON_FIELDS, type JsonFields } from './logs/json.ts'
import { LOG_FORMATS } from './logs/parser.ts'
import type { LogFormat } from './logs/request.ts'

export type { ControlPlane, TokenRead } from './control-plane-config.ts'

/** The config file when neither `--config` nor `$WEBSIGNAL_CONFIG` names one (unless `$WEBSIGNAL_CONFIG_DIR` moves it). */
export const DEFAULT_CONFIG = `${CONFIG_DIR}/websignal.json`
export const DEFAULT_LISTEN = '127.0.0.1:9466'

export interface InputConfig {
  path: string
  format: LogFormat
  site: string
  /** Host name used when the log line carries none. */
  host: string | undefined
  syslog: boolean
  jsonFields: Partial<JsonFields>
}

const INPUT_KEYS = new Set(['path', 'format', 'site', 'host', 'syslog', 'json_fields'])

/** `inputs`: an array of {path, format, site, host?, syslog?, json_fields?}; every problem is named by index. */
export function parseInputs(raw: unknown): InputConfig[] {
  if (!Array.isArray(raw) || raw.length === 0) throw new Error('must be a non-empty array of inputs')
  const problems: string[] = []
  const out = raw.map((item, i): InputConfig => {
    const at = `[${i}]`
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      problems.push(`${at}: must be an object`)
      return undefined as never
    }
    const o = item as Record<string, unknown>
    for (const k of Object.keys(o)) if (!INPUT_KEYS.has(k)) problems.push(`${at}.${k}: unknown key`)
    if (typeof o.path !== 'string' || !o.path.startsWith('/'))
      problems.push(`${at}.path: must be an absolute file path`)
    if (!LOG_FORMATS.includes(o.format as LogFormat)) {
      problems.push(`${at}.format: must be one of ${LOG_FORMATS.join(', ')}, got ${JSON.stringify(o.format)}`)
    }
    if (typeof o.site !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(o.site)) {
      problems.push(`${at}.site: must be a name of letters, digits, . _ - (up to 128 characters)`)
    }
    if (o.host !== undefined && (typeof o.host !== 'string' || !/^[A-Za-z0-9._:[\]-]{1,253}$/.test(o.host))) {
      problems.push(`${at}.host: must be a host name`)
    }
    if (o.syslog !== undefined && typeof o.syslog !== 'boolean') problems.push(`${at}.syslog: must be true or false`)
    const jf: Partial<JsonFields> = {}
    if (o.json_fields !== undefined) {
      if (o.format !== 'json') problems.push(`${at}.json_fields: only for format json`)
      if (o.json_fields === null || typeof o.json_fields !== 'object' || Array.isArray(o.json_fields)) {
        problems.push(`${at}.json_fields: must be an object`)
      } else {
        for (const [k, v] of Object.entries(o.json_fields)) {
          if (!(k in DEFAULT_JSON_FIELDS)) {
            problems.push(`${at}.json_fields.${k}: unknown key (known: ${Object.keys(DEFAULT_JSON_FIELDS).join(', ')})`)
          } else if (typeof v !== 'string' || v === '') problems.push(`${at}.json_fields.${k}: must be a field name`)
          else jf[k as keyof JsonFields] = v
        }
      }
    }
    return {
      path: o.path as string,
      format: o.format as LogFormat,
      site: o.site as string,
      host: typeof o.host === 'string' ? o.host.toLowerCase() : undefined,
      syslog: o.syslog === true,
      jsonFields: jf,
    }
  })
  const paths = new Set<string>()
  for (const [i, inp] of out.entries()) {
    if (inp && paths.has(inp.path)) problems.push(`[${i}].path: ${inp.path} is configured twice`)
    if (inp) paths.add(inp.path)
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return out
}

const name = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

/** The aggregation window: the config's `window` and replay's `--window`. */
export const windowField = field.duration({
  default: '5m',
  min: '10s',
  max: '24h',
  doc: 'aggregation window (the signal window_seconds)',
})

export const fileSchema = {
  listen: field.string({ default: DEFAULT_LISTEN, doc: 'host:port of /healthz, /readyz and /metrics' }),
  log_level: field.enum(['fatal', 'error', 'warn', 'info', 'debug', 'silent'] as const, {
    env: 'WEBSIGNAL_LOG_LEVEL',
    default: 'info',
  }),
  agent_id: field.string({
    pattern: name,
    patternDoc: 'a name of letters, digits, . _ -',
    doc: 'this instance in the lease (default host name and pid)',
  }),
  state_dir: field.string({ default: '/var/lib/websignal', minLength: 1, doc: 'read positions (offsets.json)' }),
  inputs: field.custom(parseInputs, { required: true, doc: 'access logs to tail' }),
  window: windowField,
  flush_interval: field.duration({
    default: '1s',
    min: '50ms',
    max: '1m',
    doc: 'how often aggregates go to the store',
  }),
  poll_interval: field.duration({ default: '250ms', min: '10ms', max: '10s', doc: 'how often log files are checked' }),
  shadow: field.boolean({ default: false, doc: 'detect and count, but send nothing and queue nothing' }),
  store: {
    url: field.url({ protocols: ['redis:', 'rediss:'], default: 'redis://127.0.0.1:6379', doc: 'Redis URL' }),
    sentinels: field.list({ doc: 'Sentinel host:port addresses (use with sentinel_name)' }),
    sentinel_name: field.string({ minLength: 1, doc: 'the monitored master name' }),
    namespace: field.string({ default: 'websignal', pattern: name, patternDoc: 'a name of letters, digits, . _ -' }),
    command_timeout: field.duration({ default: '2s', min: '50ms', max: '30s', doc: 'per store command' }),
  },
  detection: {
    min_suspicious_hits: field.int({ default: DEFAULT_THRESHOLDS.minSuspiciousHits, min: 1 }),
    min_requests: field.int({ default: DEFAULT_THRESHOLDS.minRequests, min: 1 }),
    min_distinct_paths: field.int({ default: DEFAULT_THRESHOLDS.minDistinctPaths, min: 1 }),
    min_error_ratio: field.number({ default: DEFAULT_THRESHOLDS.minErrorRatio, min: 0, max: 1 }),
    pattern_dirs: field.list({ doc: 'extra directories of *.txt pattern lists' }),
    disabled_lists: field.list({ doc: 'names of pattern lists to leave out (e.g. wordpress)' }),
  },
  control_plane: controlPlaneSchema,
  analytics: {
    output: field.enum(['file', 'https'] as const, { doc: 'where hourly analytics go; omit to disable analytics' }),
    file: field.string({ minLength: 1, doc: 'JSON-lines file (output file)' }),
    url: field.url({ protocols: ['https:'], doc: 'endpoint taking POST {"records": [...]} (output https)' }),
    token: field.string({
      secret: true,
      env: 'WEBSIGNAL_ANALYTICS_TOKEN',
      minLength: 1,
      doc: 'bearer token of the https output',
    }),
    ca: field.string({ minLength: 1, doc: 'CA bundle verifying the https output' }),
    secret: field.string({
      secret: true,
      env: 'WEBSIGNAL_ANALYTICS_SECRET',
      minLength: 16,
      doc: 'visitor-hash secret (16+ characters); rotating it breaks visitor continuity',
    }),
    pipeline_id: field.string({
      pattern: name,
      patternDoc: 'a name of letters, digits, . _ -',
      doc: 'default: store.namespace',
    }),
    grace: field.duration({ default: '2m', min: '1s', max: '1h', doc: 'how long after an hour ends it is closed' }),
    outbox_max: field.int({ default: 10_000, min: 1 }),
  },
}

export interface AnalyticsConfig {
  output: { kind: 'file'; path: string } | { kind: 'https'; url: string; token: string; ca?: string }
  secret: string
  pipelineId: string
  graceMs: number
  outboxMax: number
}

export interface Config {
  configPath: string
  listen: ListenAddress
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent'
  agentId: string
  stateDir: string
  inputs: InputConfig[]
  windowMs: number
  flushIntervalMs: number
  pollIntervalMs: number
  shadow: boolean
  store: { url: string; sentinels?: { hosts: string[]; name: string }; namespace: string; commandTimeoutMs: number }
  thresholds: Thresholds
  patternDirs: string[]
  disabledLists: string[]
  controlPlane: ControlPlane | undefined
  analytics: AnalyticsConfig | undefined
  /** A secret in a file every user may read: logged at start, shown by `doctor`. */
  warnings: string[]
}

/**
 * The config file path: `--config`, then `$WEBSIGNAL_CONFIG`, then the default: `websignal.json`
 * in `$WEBSIGNAL_CONFIG_DIR` (a host or package that keeps its config elsewhere; tests, which
 * cannot count on what /etc holds), else in /etc/gatehouse.
 */
export function configPath(flag: string | undefined, env: Record<string, string | undefined> = process.env): string {
  return flag ?? env.WEBSIGNAL_CONFIG ?? defaultConfig(env)
}

function defaultConfig(env: Record<string, string | undefined>): string {
  const dir = env.WEBSIGNAL_CONFIG_DIR
  return dir ? `${dir.replace(/\/+$/, '')}/websignal.json` : DEFAULT_CONFIG
}

export function loadWebsignalConfig(
  path: string,
  env: Record<string, string | undefined> = process.env,
  options: { readSecretFiles?: boolean } = {},
): Config {
  try {
    // The cross-field rules run on what loaded even when some fields are bad, so every
    // problem is named at once rather than the next one only after the first are fixed.
    return loadWithChecks(
      () => loadConfig(fileSchema, { file: path, env, ...options }),
      (loaded, invalid) => finishConfig(loaded, invalid, path, env),
    )
  } catch (err) {
    // `websignal status` typed bare on a host whose config lives elsewhere: say how to name it.
    const fallback = defaultConfig(env)
    if (
      path === fallback &&
      err instanceof ConfigError &&
      err.lines.includes(`config file ${path}: cannot be read (ENOENT)`)
    ) {
      throw new ConfigError(
        `config file ${path} (the default) does not exist: name the agent's config with --config FILE or $WEBSIGNAL_CONFIG`,
      )
    }
    throw err
  }
}

type Loaded = ReturnType<typeof loadConfig<typeof fileSchema>>

/**
 * The cross-field rules, and the config they leave. `invalid` holds the settings given with a
 * value the loader refused (already reported, undefined here): a rule that reads one is skipped,
 * a rule that asks whether it was given counts it as given.
 */
function finishConfig(
  loaded: Loaded,
  invalid: ReadonlySet<string>,
  path: string,
  env: Record<string, string | undefined>,
): Config {
  const c = loaded.config
  const errors: string[] = []
  let listen: ListenAddress | undefined
  if (!invalid.has('listen')) {
    try {
      listen = parseListenAddress(c.listen)
    } catch (err) {
      errors.push(`listen: ${(err as Error).message}`)
    }
  }
  const s = c.store
  const sentinels = invalid.has('store.sentinels') || (s.sentinels ?? []).length > 0
  if (sentinels !== (invalid.has('store.sentinel_name') || s.sentinel_name !== undefined)) {
    errors.push('store: sentinels and sentinel_name go together')
  }
  for (const h of s.sentinels ?? [])
    if (!/^[^\s:]+:\d{1,5}$/.test(h)) errors.push(`store.sentinels: ${h} is not host:port`)
  if (!invalid.has('store.url') && !/^\/?(\d{1,5})?$/.test(new URL(s.url).pathname)) {
    errors.push(`store.url: the path is a database number (redis://host:6379/2), not "${new URL(s.url).pathname}"`)
  }
  const controlPlane = checkControlPlane(c.control_plane, loaded.sources, invalid, errors)
  if (controlPlane?.auth.kind === 'token') controlPlane.readToken = () => readControlPlaneToken(path, env)
  const analytics = checkAnalytics(c.analytics, c.store.namespace, loaded.sources, invalid, errors)
  if (errors.length > 0) throw new ConfigError(errors)
  const d = c.detection
  return {
    configPath: path,
    listen: listen!,
    logLevel: c.log_level,
    agentId: c.agent_id ?? `${hostname()}-${process.pid}`,
    stateDir: c.state_dir,
    inputs: c.inputs,
    windowMs: c.window,
    flushIntervalMs: c.flush_interval,
    pollIntervalMs: c.poll_interval,
    shadow: c.shadow,
    store: {
      url: s.url,
      ...(s.sentinel_name ? { sentinels: { hosts: s.sentinels ?? [], name: s.sentinel_name } } : {}),
      namespace: s.namespace,
      commandTimeoutMs: s.command_timeout,
    },
    thresholds: {
      minSuspiciousHits: d.min_suspicious_hits,
      minRequests: d.min_requests,
      minDistinctPaths: d.min_distinct_paths,
      minErrorRatio: d.min_error_ratio,
    },
    patternDirs: d.pattern_dirs ?? [],
    disabledLists: d.disabled_lists ?? [],
    controlPlane,
    analytics,
    warnings: [...loaded.warnings, ...keyWarning(controlPlane)],
  }
}

function checkAnalytics(
  a: Loaded['config']['analytics'],
  namespace: string,
  sources: Record<string, string>,
  invalid: ReadonlySet<string>,
  errors: string[],
): AnalyticsConfig | undefined {
  const given = [
    ...Object.keys(sources).filter((k) => k.startsWith('analytics.') && sources[k] !== 'default'),
    ...[...invalid].filter((k) => k.startsWith('analytics.')),
  ]
  // A setting given with a bad value counts as given; its value is not read.
  const has = (key: keyof typeof a) => a[key] !== undefined || invalid.has(`analytics.${key}`)
  if (a.output === undefined) {
    if (given.length > 0 && !invalid.has('analytics.output'))
      errors.push(`analytics.output: required when analytics is configured (${given.join(', ')} set)`)
    return undefined
  }
  const before = errors.length
  if (!has('secret')) {
    errors.push('analytics.secret: required (or WEBSIGNAL_ANALYTICS_SECRET / WEBSIGNAL_ANALYTICS_SECRET_FILE)')
  }
  if (a.output === 'file' && !has('file')) errors.push('analytics.file: required with output file')
  if (a.output === 'https' && !(has('url') && has('token'))) {
    errors.push('analytics: output https needs url and token (or WEBSIGNAL_ANALYTICS_TOKEN_FILE)')
  }
  if (errors.length > before || invalid.size > 0) return undefined
  return {
    output:
      a.output === 'file'
        ? { kind: 'file', path: a.file! }
        : { kind: 'https', url: a.url!, token: a.token!, ...(a.ca ? { ca: a.ca } : {}) },
    secret: a.secret!,
    pipelineId: a.pipeline_id ?? namespace,
    graceMs: a.grace,
    outboxMax: a.outbox_max,
  }
}

/** The store as named to an operator: `host:port` and its database when not 0, or the sentinels. */
export function storeAddress(store: Config['store']): string {
  if (store.sentinels) return `sentinel ${store.sentinels.name} via ${store.sentinels.hosts.join(', ')}`
  const u = new URL(store.url)
  const db = Number(u.pathname.slice(1) || 0)
  return db === 0 ? u.host : `${u.host}/${db}`
}
