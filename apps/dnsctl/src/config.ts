/**
 * dnsctl configuration: flags > DNSCTL_* environment > JSON file (--config, $DNSCTL_CONFIG or
 * /etc/gatehouse/dnsctl.json) > defaults.
 * The only module that reads process.env.
 */
import { join, resolve } from 'node:path'
import { loadAppConfig } from '@gatehouse/kit/cli/config-file.ts'
import { ConfigError, type ConfigOf, field, loadWithChecks } from '@gatehouse/kit/config.ts'
import { isLoopback, type ListenAddress, parseListenAddress } from '@gatehouse/kit/net.ts'
import { address } from './config-address.ts'
import { haProblems, haSchema, metricsListenField } from './ha/config-fields.ts'
import { prometheusProblems, prometheusSchema } from './history/config-fields.ts'
import { providerProblems, providerSchema } from './provider/config-fields.ts'
import { FAILPOINTS } from './publish/failpoints.ts'

export const schema = {
  listen: field.listen({
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
  auditRetention: field.duration({
    env: 'DNSCTL_AUDIT_RETENTION',
    flag: 'audit-retention',
    default: '8760h',
    doc: 'audit and HA events older than this are removed (8760h = a year; the newest publication always stays); 0 keeps every event; otherwise at least 24h',
  }),
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
  blocklist: {
    maxSourceBytes: field.bytes({
      env: 'DNSCTL_BLOCKLIST_MAX_BYTES',
      flag: 'blocklist-max-bytes',
      default: '64MiB',
      min: 1024,
      doc: 'largest blocklist source download; a bigger source fails and keeps its last good copy',
    }),
    fetchTimeout: field.duration({
      env: 'DNSCTL_BLOCKLIST_FETCH_TIMEOUT',
      flag: 'blocklist-fetch-timeout',
      default: '60s',
      min: '100ms',
      doc: 'deadline for downloading one blocklist source',
    }),
    caFile: field.string({
      env: 'DNSCTL_BLOCKLIST_CA_FILE',
      flag: 'blocklist-ca-file',
      doc: 'PEM file of extra CA certificates trusted for blocklist sources (besides the system roots)',
    }),
    refreshInterval: field.duration({
      env: 'DNSCTL_BLOCKLIST_REFRESH_INTERVAL',
      flag: 'blocklist-refresh-interval',
      default: '24h',
      min: '1m',
      doc: 'time between scheduled blocklist refreshes',
    }),
    refreshJitter: field.duration({
      env: 'DNSCTL_BLOCKLIST_REFRESH_JITTER',
      flag: 'blocklist-refresh-jitter',
      default: '1h',
      min: '1ms',
      doc: 'random extra delay of each scheduled refresh (spreads load on the list servers)',
    }),
  },
  resolver: {
    rpzFiles: field.list({
      env: 'DNSCTL_RESOLVER_RPZ_FILES',
      flag: 'resolver-rpz-file',
      default: [],
      doc: 'the RPZ file each kresd instance loads with the watch flag (comma-separated, one per instance)',
    }),
    addresses: field.list({
      env: 'DNSCTL_RESOLVER_ADDRESSES',
      flag: 'resolver-address',
      default: [],
      item: (s: string) => address(s),
      doc: 'host:port where each kresd instance alone answers DNS, in the order of the RPZ files',
    }),
    controlDirs: field.list({
      env: 'DNSCTL_RESOLVER_CONTROL_DIRS',
      flag: 'resolver-control-dir',
      default: [],
      doc: 'kresd control-socket folders (<workdir>/control): every socket in them is sampled for the metrics history',
    }),
    sampleInterval: field.duration({
      env: 'DNSCTL_RESOLVER_SAMPLE_INTERVAL',
      flag: 'resolver-sample-interval',
      default: '15s',
      min: '1s',
      doc: 'how often the resolver counters are sampled into the metrics history',
    }),
    loadTimeout: field.duration({
      env: 'DNSCTL_RESOLVER_LOAD_TIMEOUT',
      flag: 'resolver-load-timeout',
      default: '2m',
      min: '1s',
      doc: 'how long one kresd instance may take to load a new blocklist before the refresh fails',
    }),
  },
  metricsPrometheus: prometheusSchema,
  analytics: {
    privacy: field.enum(['off', 'aggregate', 'detailed'] as const, {
      env: 'DNSCTL_ANALYTICS_PRIVACY',
      flag: 'analytics-privacy',
      default: 'aggregate',
      doc: 'query analytics: off (nothing recorded), aggregate (client networks only: IPv4 /24, IPv6 /48), detailed (full client addresses and the newest queries)',
    }),
    dnstapSocket: field.string({
      env: 'DNSCTL_DNSTAP_SOCKET',
      flag: 'dnstap-socket',
      doc: "unix socket dnsctl listens on for kresd's dnstap stream (kresd's dnstap socket_path); unset: no analytics",
    }),
  },
  transfer: {
    zones: field.list({
      env: 'DNSCTL_TRANSFER_ZONES',
      flag: 'transfer-zone',
      default: [],
      doc: 'zones this knotd is secondary for, refreshed and compared hourly (comma-separated)',
    }),
    primary: field.custom(address, {
      env: 'DNSCTL_TRANSFER_PRIMARY',
      flag: 'transfer-primary',
      doc: 'host:port of the primary the transferred zones are compared with (AXFR)',
    }),
    interval: field.duration({
      env: 'DNSCTL_TRANSFER_INTERVAL',
      flag: 'transfer-interval',
      default: '1h',
      min: '1m',
      doc: 'time between zone-transfer refreshes',
    }),
    timeout: field.duration({
      env: 'DNSCTL_TRANSFER_TIMEOUT',
      flag: 'transfer-timeout',
      default: '60s',
      min: '1s',
      doc: 'deadline of one zone transfer (AXFR) for the comparison',
    }),
  },
  metricsListen: metricsListenField,
  ha: haSchema,
  provider: providerSchema,
  console: {
    listen: field.listen({
      env: 'DNSCTL_CONSOLE_LISTEN',
      flag: 'console-listen',
      doc: 'web console listen address host:port (unset: no console); sign in with `dnsctl console`',
    }),
    publicUrl: field.url({
      env: 'DNSCTL_CONSOLE_PUBLIC_URL',
      flag: 'console-public-url',
      protocols: ['http:', 'https:'],
      doc: 'the address browsers reach the console by, when not its listen address (a TLS proxy in front)',
    }),
    sessionTtl: field.duration({
      env: 'DNSCTL_CONSOLE_SESSION_TTL',
      flag: 'console-session-ttl',
      default: '12h',
      min: '1m',
      doc: 'how long a console sign-in lasts',
    }),
    linkTtl: field.duration({
      env: 'DNSCTL_CONSOLE_LINK_TTL',
      flag: 'console-link-ttl',
      default: '10m',
      min: '10s',
      doc: 'how long a sign-in link printed by `dnsctl console` stays usable (once)',
    }),
  },
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

export interface Config extends Omit<RawConfig, 'listen' | 'database' | 'blocklistDir' | 'resultsDir' | 'console'> {
  listen: ListenAddress
  console: Omit<RawConfig['console'], 'listen'> & { listen: ListenAddress | undefined }
  database: string
  blocklistDir: string
  resultsDir: string
  journalDir: string
}

/**
 * Fill the defaults that depend on other fields and check cross-field rules. `invalid` holds the
 * dotted paths of settings that were given but did not load (see the kit's `loadWithChecks`): a
 * rule reading such a setting skips itself, a rule asking only whether a setting was given
 * counts it as given, so a bad value is not also reported as missing.
 */
export function finishConfig(raw: RawConfig, invalid: ReadonlySet<string> = new Set()): Config {
  const problems: string[] = []
  const ok = (...paths: string[]) => paths.every((p) => !invalid.has(p))
  const given = (path: string, value: unknown) => value !== undefined || invalid.has(path)
  const listen = ok('listen') ? parseListenAddress(raw.listen) : undefined
  if (listen && ok('allowNonLoopback') && !raw.allowNonLoopback && !isLoopback(listen.host)) {
    problems.push(
      `listen: ${listen.host} is not a loopback address; the API has no authentication (set --allow-non-loopback to acknowledge)`,
    )
  }
  if (ok('resolver.rpzFiles', 'resolver.addresses') && raw.resolver.rpzFiles.length !== raw.resolver.addresses.length) {
    problems.push(
      `resolver: ${raw.resolver.rpzFiles.length} RPZ files but ${raw.resolver.addresses.length} addresses; give one address per RPZ file`,
    )
  }
  const consoleListen = raw.console.listen === undefined ? undefined : parseListenAddress(raw.console.listen)
  if (listen && consoleListen && consoleListen.port !== 0 && consoleListen.port === listen.port) {
    problems.push('console.listen: the console needs a port of its own (it is the API listen port)')
  }
  if (consoleListen && ok('allowNonLoopback') && !raw.allowNonLoopback && !isLoopback(consoleListen.host)) {
    problems.push(
      `console.listen: ${consoleListen.host} is not a loopback address (set --allow-non-loopback to acknowledge; serve it over TLS)`,
    )
  }
  if (ok('transfer.zones') && raw.transfer.zones.length > 0 && !given('transfer.primary', raw.transfer.primary)) {
    problems.push('transfer: if transfer zones are set, transfer.primary (--transfer-primary) must be set')
  }
  if (ok('auditRetention') && raw.auditRetention !== 0 && raw.auditRetention < 86_400_000) {
    problems.push('audit_retention: at least 24h, or 0 to keep every event')
  }
  problems.push(...haProblems(raw, invalid), ...providerProblems(raw, invalid), ...prometheusProblems(raw))
  if (problems.length > 0) throw new ConfigError(problems)
  const stateDir = resolve(raw.stateDir)
  return {
    ...raw,
    listen: listen!,
    console: { ...raw.console, listen: consoleListen },
    stateDir,
    database: raw.database ?? `sqlite:${join(stateDir, 'dnsctl.db')}`,
    blocklistDir: resolve(raw.blocklistDir ?? join(stateDir, 'blocklists')),
    resultsDir: resolve(raw.resultsDir ?? join(stateDir, 'results')),
    journalDir: join(stateDir, 'journal'),
    knot: { ...raw.knot, zonesDir: resolve(raw.knot.zonesDir) },
  }
}

/**
 * Load from flags (raw `argv`, or `flags` parsed by the CLI) and the environment; the JSON file is
 * `--config FILE`, else `$DNSCTL_CONFIG`, else `/etc/gatehouse/dnsctl.json` when it exists. Bad
 * values and broken cross-field rules are reported together, so fixing one does not reveal the next.
 */
export function loadDnsctlConfig(
  argv: string[],
  env: Record<string, string | undefined> = process.env,
  options: { flags?: Record<string, unknown>; config?: string | undefined } = {},
): Config & { warnings: string[] } {
  return loadWithChecks(
    () =>
      loadAppConfig('dnsctl', schema, {
        argv,
        env,
        ...(options.flags ? { flags: options.flags } : {}),
        ...(options.config !== undefined ? { config: options.config } : {}),
      }),
    ({ config, positionals, warnings }, invalid) => {
      if (positionals.length > 0) throw new ConfigError(`unexpected argument ${JSON.stringify(positionals[0])}`)
      return { ...finishConfig(config, invalid), warnings }
    },
  )
}

/** The API's base URL as the config names it, for the CLI (`http://127.0.0.1:8053` by default). */
export function apiUrlFromConfig(env: Record<string, string | undefined>, config: string | undefined): string {
  const { listen } = loadAppConfig(
    'dnsctl',
    { listen: schema.listen },
    { env, partial: true, ...(config !== undefined ? { config } : {}) },
  ).config
  const { host, port } = parseListenAddress(listen)
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`
}
