/**
 * dnsctl configuration: flags > DNSCTL_* environment > JSON file (--config) > defaults.
 * The only module that reads process.env.
 */
import { join, resolve } from 'node:path'
import {
  type AddressError,
  ConfigError,
  type ConfigOf,
  field,
  isLoopback,
  type ListenAddress,
  loadConfig,
  parseListenAddress,
} from '@gatehouse/kit'
import { FAILPOINTS } from './publish/failpoints.ts'

function address(raw: unknown): ListenAddress {
  try {
    return parseListenAddress(String(raw))
  } catch (err) {
    throw new Error((err as AddressError).message)
  }
}

export const schema = {
  listen: field.custom(address, {
    env: 'DNSCTL_LISTEN',
    flag: 'listen',
    default: '127.0.0.1:8053',
    doc: 'HTTP listen address host:port; loopback only unless --allow-non-loopback',
  }),
  allowNonLoopback: field.boolean({
    env: 'DNSCTL_ALLOW_NON_LOOPBACK',
    flag: 'allow-non-loopback',
    default: false,
    doc: 'acknowledge that the API (which has no authentication) listens beyond loopback',
  }),
  allowedHosts: field.list({
    env: 'DNSCTL_ALLOWED_HOSTS',
    flag: 'allowed-host',
    default: [],
    doc: 'Host header names the API answers besides loopback ones (comma-separated); others get 403 (DNS rebinding)',
  }),
  stateDir: field.string({
    env: 'DNSCTL_STATE_DIR',
    flag: 'state-dir',
    default: 'dnsctl-data',
    doc: 'folder for the database, the publication journal, blocklist files and job results',
  }),
  database: field.string({
    env: 'DNSCTL_DATABASE',
    flag: 'database',
    pattern: /^sqlite:.+/,
    patternDoc: 'a sqlite:<file> URL',
    doc: 'history and audit database (default sqlite:<state-dir>/dnsctl.db)',
  }),
  knot: {
    knotc: field.string({ env: 'DNSCTL_KNOTC', flag: 'knotc', default: '/usr/sbin/knotc', doc: 'path of knotc' }),
    socket: field.string({
      env: 'DNSCTL_KNOT_SOCKET',
      flag: 'knot-socket',
      default: '/run/knot/knot.sock',
      doc: "knotd's control socket",
    }),
    zonesDir: field.string({
      env: 'DNSCTL_KNOT_ZONES_DIR',
      flag: 'knot-zones-dir',
      default: '/var/lib/knot',
      doc: 'Knot\'s zone storage folder; zone files are named "<zone>.zone" (template file: "%s.zone")',
    }),
    address: field.custom(address, {
      env: 'DNSCTL_KNOT_ADDRESS',
      flag: 'knot-address',
      default: '127.0.0.1:53',
      doc: 'where knotd answers DNS: SOA queries verify each publication',
    }),
    verifyTimeout: field.duration({
      env: 'DNSCTL_VERIFY_TIMEOUT',
      flag: 'verify-timeout',
      default: '10s',
      min: '100ms',
      doc: 'how long to wait for knotd to serve a new serial before rolling back',
    }),
    reconcileInterval: field.duration({
      env: 'DNSCTL_RECONCILE_INTERVAL',
      flag: 'reconcile-interval',
      default: '1m',
      min: '1s',
      doc: 'how often to check that knotd serves every managed zone (and re-add zones a knotd restart dropped)',
    }),
    commandTimeout: field.duration({
      env: 'DNSCTL_KNOTC_TIMEOUT',
      flag: 'knotc-timeout',
      default: '30s',
      min: '1s',
      doc: 'longest knotc run (a 100k-record zone reloads in well under a second)',
    }),
  },
  notify: {
    replicas: field.list({
      env: 'DNSCTL_NOTIFY_REPLICAS',
      flag: 'notify-replica',
      default: [],
      item: (s: string) => address(s),
      doc: 'host:port of each replica sent a DNS NOTIFY after zone create and delete (comma-separated)',
    }),
    timeout: field.duration({
      env: 'DNSCTL_NOTIFY_TIMEOUT',
      flag: 'notify-timeout',
      default: '2s',
      min: '10ms',
      doc: 'how long to wait for each NOTIFY answer before reporting a warning',
    }),
  },
  historyKeep: field.int({
    env: 'DNSCTL_HISTORY_KEEP',
    flag: 'history-keep',
    default: 0,
    min: 0,
    doc: 'prior revisions kept per zone in the history store (0: keep all)',
  }),
  blocklistDir: field.string({
    env: 'DNSCTL_BLOCKLIST_DIR',
    flag: 'blocklist-dir',
    doc: 'where the blocklist configuration files are published (default <state-dir>/blocklists)',
  }),
  resultsDir: field.string({
    env: 'DNSCTL_RESULTS_DIR',
    flag: 'results-dir',
    doc: 'where the refresh jobs write their result files (default <state-dir>/results)',
  }),
  bodyLimit: field.bytes({
    env: 'DNSCTL_BODY_LIMIT',
    flag: 'body-limit',
    default: '32MiB',
    min: 1024,
    doc: 'largest request body (zone text included)',
  }),
  logLevel: field.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, {
    env: 'DNSCTL_LOG_LEVEL',
    flag: 'log-level',
    default: 'info',
  }),
  failpoints: field.list({
    env: 'DNSCTL_FAILPOINTS',
    default: [],
    item: (s: string) => {
      if (!(FAILPOINTS as readonly string[]).includes(s))
        throw new Error(`unknown failpoint (known: ${FAILPOINTS.join(', ')})`)
      return s
    },
    doc: 'testing only: publication steps at which the process kills itself (crash-safety tests)',
  }),
}

export type RawConfig = ConfigOf<typeof schema>

export interface Config extends Omit<RawConfig, 'database' | 'blocklistDir' | 'resultsDir'> {
  database: string
  blocklistDir: string
  resultsDir: string
  journalDir: string
}

/** Fill the defaults that depend on other fields and check cross-field rules. */
export function finishConfig(raw: RawConfig): Config {
  const problems: string[] = []
  if (!raw.allowNonLoopback && !isLoopback(raw.listen.host)) {
    problems.push(
      `listen: ${raw.listen.host} is not a loopback address; the API has no authentication (set --allow-non-loopback to acknowledge)`,
    )
  }
  if (problems.length > 0) throw new ConfigError(problems)
  const stateDir = resolve(raw.stateDir)
  return {
    ...raw,
    stateDir,
    database: raw.database ?? `sqlite:${join(stateDir, 'dnsctl.db')}`,
    blocklistDir: resolve(raw.blocklistDir ?? join(stateDir, 'blocklists')),
    resultsDir: resolve(raw.resultsDir ?? join(stateDir, 'results')),
    journalDir: join(stateDir, 'journal'),
    knot: { ...raw.knot, zonesDir: resolve(raw.knot.zonesDir) },
  }
}

/** Load from argv and process.env (`--config FILE` or DNSCTL_CONFIG names the JSON file). */
export function loadDnsctlConfig(argv: string[], env: Record<string, string | undefined> = process.env): Config {
  let file = env.DNSCTL_CONFIG
  const rest: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--config' || a === '-config') file = argv[++i]
    else if (a.startsWith('--config=')) file = a.slice('--config='.length)
    else rest.push(a)
  }
  const { config, positionals } = loadConfig(schema, { argv: rest, env, ...(file ? { file } : {}) })
  if (positionals.length > 0) throw new ConfigError(`unexpected argument ${JSON.stringify(positionals[0])}`)
  return finishConfig(config)
}
