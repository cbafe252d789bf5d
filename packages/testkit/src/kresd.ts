/**
 * Real Knot Resolver processes (kresd 5.6) on free loopback ports: one or more instances
 * sharing one DNS address (SO_REUSEPORT, the multi-instance set-up of the Knot Resolver docs),
 * each also on a private port so a test or a rollout can ask one instance directly. Each
 * instance loads its own RPZ file with the watch flag, so renaming a new file over it makes
 * that instance (and only that one) reload.
 */
import { execFile } from 'node:child_process'
import { accessSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { type Child, startChild } from './child.ts'
import { dnsQuery } from './dns.ts'
import { freePort, MissingBinaryError, requireBinary, tempDir } from './env.ts'

const run = promisify(execFile)

/** An empty response-policy zone: the file every instance starts with unless told otherwise. */
export const EMPTY_RPZ = `$TTL 60
@ IN SOA localhost. nobody.invalid. 1 3600 900 86400 60
`

export interface KresdOptions {
  /** Processes sharing the DNS port (default 1; 2 for reload-in-turn). */
  instances?: number
  /** Initial RPZ text for every instance (default EMPTY_RPZ). */
  rpz?: string
  /** Where queries that no policy answers go, as `host@port` (e.g. a knotd); default: none, REFUSED. */
  stub?: string
  /** Extra Lua appended to each instance's configuration. */
  extraConfig?: string
  /**
   * Serve each instance's counters at `/metrics` on a port of its own (kresd's http module,
   * Debian package knot-resolver-module-http), metric names prefixed with `namespace`.
   */
  metrics?: { namespace?: string }
}

export interface KresdInstance {
  /** The private DNS port of this instance alone. */
  port: number
  /** The RPZ file this instance watches. */
  rpzFile: string
  /** With `metrics`: the port of this instance's `/metrics` (plain HTTP). */
  metricsPort?: number
  child: Child
}

export interface Kresd {
  /** The shared DNS port all instances answer on. */
  port: number
  instances: KresdInstance[]
  dir: string
  /** Run `kdig @127.0.0.1 -p PORT ...args` against the shared port. */
  kdig(...args: string[]): Promise<string>
  stop(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

function requireCqueues() {
  try {
    accessSync('/usr/share/lua/5.1/cqueues.lua')
  } catch {
    throw new MissingBinaryError(
      'lua-cqueues not found: install the Debian package lua-cqueues (kresd needs it to reload a changed RPZ file)',
    )
  }
}

const HTTP_MODULE = '/usr/lib/x86_64-linux-gnu/knot-resolver/kres_modules/http.lua'

function requireHttpModule() {
  try {
    accessSync(HTTP_MODULE)
  } catch {
    throw new MissingBinaryError(
      "kresd's http module not found: install the Debian package knot-resolver-module-http (its /metrics)",
    )
  }
}

/** kresd configuration (Lua) for one instance. */
export function kresdConfig(options: {
  sharedPort: number
  port: number
  rpzFile: string
  cacheDir: string
  stub?: string
  extra?: string
  metrics?: { port: number; namespace: string }
}): string {
  const lua = (s: string) => JSON.stringify(s)
  // With a stub target, the STUB rule comes first, wrapped as a chain action: kresd 5.6's
  // policy.STUB (like FORWARD) returns the state and so ends policy evaluation, and the RPZ's
  // `rpz-passthru` (policy.PASS) ends it too. Placed after the RPZ, the stub never applied to
  // an allowed name under a blocked parent (kresd iterated from the root); placed first as is,
  // the RPZ would never apply. The wrapper sets the stub target and returns nil (go on), so the
  // RPZ still answers blocked names, and every other name (passthru included) goes to the stub.
  // The closing PASS ends evaluation as policy.STUB did: without it kresd's built-in special-use
  // rules (e.g. NXDOMAIN for all of `test.`) would answer names the stub target serves.
  const rules = options.stub
    ? `local stub = policy.STUB(${lua(options.stub)})
policy.add(policy.all(function(state, req) stub(state, req) return nil end))
policy.add(policy.rpz(policy.DENY, ${lua(options.rpzFile)}, true))
policy.add(policy.all(policy.PASS))`
    : `policy.add(policy.rpz(policy.DENY, ${lua(options.rpzFile)}, true))
policy.add(policy.all(policy.REFUSE))`
  // Each instance's own counters: its control directory holds only its socket, so the
  // module's map() over the instances sees this one alone.
  const metrics = options.metrics
    ? `modules.load('http')
http.config({ tls = false })
http.prometheus.namespace = ${lua(options.metrics.namespace)}
net.listen('127.0.0.1', ${options.metrics.port}, { kind = 'webmgmt' })`
    : ''
  return `net.listen('127.0.0.1', ${options.sharedPort}, { kind = 'dns' })
net.listen('127.0.0.1', ${options.port}, { kind = 'dns' })
modules = { 'stats', 'policy' }
cache.open(10*MB, ${lua(`lmdb://${options.cacheDir}`)})
${rules}
${metrics}
${options.extra ?? ''}
`
}

/** @example const kresd = await startKresd({ instances: 2, stub: `127.0.0.1@${knot.port}` }); after(() => kresd.stop()) */
export async function startKresd(options: KresdOptions = {}): Promise<Kresd> {
  const kresd = requireBinary('/usr/sbin/kresd', 'knot-resolver')
  const kdigBin = requireBinary('/usr/bin/kdig', 'knot-dnsutils')
  requireCqueues()
  if (options.metrics) requireHttpModule()
  const dir = tempDir('gatehouse-kresd-')
  const sharedPort = await freePort()
  const cacheDir = join(dir.path, 'cache')
  mkdirSync(cacheDir)
  const instances: KresdInstance[] = []
  const stop = async () => {
    await Promise.all(instances.map((i) => i.child.stop()))
    dir.remove()
  }
  try {
    for (let n = 0; n < (options.instances ?? 1); n++) {
      const workDir = join(dir.path, `instance-${n}`)
      mkdirSync(workDir)
      const port = await freePort()
      const rpzFile = join(workDir, 'rpz', 'blocklist.rpz')
      mkdirSync(join(workDir, 'rpz'))
      writeFileSync(rpzFile, options.rpz ?? EMPTY_RPZ)
      const metricsPort = options.metrics ? await freePort() : undefined
      const configFile = join(workDir, 'kresd.conf')
      writeFileSync(
        configFile,
        kresdConfig({
          sharedPort,
          port,
          rpzFile,
          cacheDir,
          ...(options.stub ? { stub: options.stub } : {}),
          ...(options.extraConfig ? { extra: options.extraConfig } : {}),
          ...(metricsPort !== undefined
            ? { metrics: { port: metricsPort, namespace: options.metrics?.namespace ?? '' } }
            : {}),
        }),
      )
      const child = await startChild({
        name: `kresd instance ${n}`,
        command: kresd,
        args: ['-n', '-c', configFile, workDir],
        logFile: join(workDir, 'kresd.log'),
        // Any answer on the private port means the listeners and the policy (RPZ) are loaded.
        probe: async () =>
          (await dnsQuery(port, 'localhost', 'A', '127.0.0.1', 200)) !== undefined &&
          (metricsPort === undefined || (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).ok),
      })
      instances.push({ port, rpzFile, child, ...(metricsPort !== undefined ? { metricsPort } : {}) })
    }
  } catch (err) {
    await stop()
    throw err
  }
  return {
    port: sharedPort,
    instances,
    dir: dir.path,
    async kdig(...args: string[]) {
      const { stdout } = await run(kdigBin, ['@127.0.0.1', '-p', String(sharedPort), ...args])
      return stdout
    },
    stop,
    [Symbol.asyncDispose]: stop,
  }
}
