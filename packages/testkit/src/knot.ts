/**
 * A real Knot DNS server (knotd) on a free loopback port with its control socket, zone
 * storage and `knotc`/`kdig` helpers. Zones can be added and removed at runtime.
 */
import { execFile } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startChild } from './child.ts'
import { soaSerial } from './dns.ts'
import { freePort, requireBinary, tempDir } from './env.ts'

const run = promisify(execFile)

export interface KnotOptions {
  /** Zones to serve from the start: name -> zone file text. */
  zones?: Record<string, string>
  /**
   * Settings of the default template that replace the defaults below, e.g.
   * `{ 'journal-content': 'changes', 'zonefile-load': 'difference' }` for a primary that serves IXFR.
   */
  template?: Record<string, string>
}

const TEMPLATE_DEFAULTS: Record<string, string> = {
  'zonefile-sync': '-1',
  'zonefile-load': 'whole',
  'journal-content': 'none',
  'semantic-checks': 'on',
}

export interface Knot {
  port: number
  /** Folder of the zone files (`<zone>.zone`), Knot's `storage`. */
  zonesDir: string
  /** knotd configuration file. */
  configFile: string
  controlSocket: string
  /** Run `knotc -s SOCK ...args`; rejects with knotc's output when it exits non-zero. */
  knotc(...args: string[]): Promise<string>
  /** knotd's log so far (transfers, NOTIFYs, reloads). */
  log(): string
  /** Run `kdig @127.0.0.1 -p PORT ...args`. */
  kdig(...args: string[]): Promise<string>
  /** Write `<zone>.zone` and add the zone to the running server. */
  addZone(zone: string, text: string): Promise<void>
  soaSerial(zone: string): Promise<number | undefined>
  stop(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

export function knotConfig(options: {
  port: number
  runDir: string
  dbDir: string
  zonesDir: string
  zones: string[]
  template?: Record<string, string>
}): string {
  const settings = Object.entries({ ...TEMPLATE_DEFAULTS, ...options.template })
    .map(([k, v]) => `    ${k}: ${v}`)
    .join('\n')
  const zoneLines = options.zones.map((z) => `  - domain: ${z}`).join('\n')
  return `server:
  listen: 127.0.0.1@${options.port}
  rundir: ${options.runDir}
database:
  storage: ${options.dbDir}
control:
  listen: ${options.runDir}/knot.sock
log:
  - target: stderr
    any: info
template:
  - id: default
    storage: ${options.zonesDir}
    file: "%s.zone"
${settings}
${options.zones.length > 0 ? `zone:\n${zoneLines}\n` : ''}`
}

/** @example const knot = await startKnot({ zones: { 'example.test': zoneText } }); after(() => knot.stop()) */
export async function startKnot(options: KnotOptions = {}): Promise<Knot> {
  const knotd = requireBinary('/usr/sbin/knotd', 'knot')
  const knotcBin = requireBinary('/usr/sbin/knotc', 'knot')
  const kdigBin = requireBinary('/usr/bin/kdig', 'knot-dnsutils')
  const dir = tempDir('gatehouse-knot-')
  const runDir = join(dir.path, 'run')
  const dbDir = join(dir.path, 'db')
  const zonesDir = join(dir.path, 'zones')
  for (const d of [runDir, dbDir, zonesDir]) mkdirSync(d, { recursive: true })
  const port = await freePort()
  const zones = options.zones ?? {}
  for (const [zone, text] of Object.entries(zones)) writeFileSync(join(zonesDir, `${zone}.zone`), text)
  const configFile = join(dir.path, 'knot.conf')
  writeFileSync(
    configFile,
    knotConfig({
      port,
      runDir,
      dbDir,
      zonesDir,
      zones: Object.keys(zones),
      ...(options.template ? { template: options.template } : {}),
    }),
  )
  const controlSocket = join(runDir, 'knot.sock')
  const knotc = async (...args: string[]) => {
    try {
      const { stdout } = await run(knotcBin, ['-s', controlSocket, '-t', '10', ...args])
      return stdout
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string }
      throw new Error(`knotc ${args.join(' ')} failed: ${(e.stderr || e.stdout || e.message).trim()}`)
    }
  }
  const child = await startChild({
    name: 'knotd',
    command: knotd,
    args: ['-c', configFile],
    logFile: join(dir.path, 'knotd.log'),
    probe: async () => {
      await run(knotcBin, ['-s', controlSocket, '-t', '1', 'status'])
      return true
    },
  })
  // Zones load in the background after startup; wait until each answers.
  for (const zone of Object.keys(zones)) {
    const deadline = Date.now() + 10_000
    while ((await soaSerial(port, zone).catch(() => undefined)) === undefined) {
      if (Date.now() > deadline) throw new Error(`knotd does not serve ${zone}:\n${child.log()}`)
      await new Promise((r) => setTimeout(r, 25))
    }
  }
  const stop = async () => {
    await child.stop()
    dir.remove()
  }
  return {
    port,
    zonesDir,
    configFile,
    controlSocket,
    knotc,
    log: () => child.log(),
    async kdig(...args: string[]) {
      const { stdout } = await run(kdigBin, [`@127.0.0.1`, '-p', String(port), ...args])
      return stdout
    },
    async addZone(zone: string, text: string) {
      writeFileSync(join(zonesDir, `${zone}.zone`), text)
      await knotc('conf-begin')
      try {
        await knotc('conf-set', `zone[${zone}]`)
        await knotc('conf-commit')
      } catch (err) {
        await knotc('conf-abort').catch(() => {})
        throw err
      }
      await knotc('-b', 'zone-reload', zone).catch(() => {})
    },
    soaSerial: (zone: string) => soaSerial(port, zone),
    stop,
    [Symbol.asyncDispose]: stop,
  }
}
