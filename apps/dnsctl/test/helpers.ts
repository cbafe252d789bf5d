/** Test harness: a real knotd (testkit) and dnsctl built on a temporary config, on a free port. */
import { PassThrough } from 'node:stream'
import { createLogger, openDatabase } from '@gatehouse/kit'
import { type Knot, startKnot, tempDir } from '@gatehouse/testkit'
import type { Kysely } from 'kysely'
import { type Config, finishConfig, loadDnsctlConfig } from '../src/config.ts'
import { migrations } from '../src/db/migrations/index.ts'
import type { DB } from '../src/db/schema.ts'
import { buildServer, type Dnsctl } from '../src/server.ts'

export const ZONE = 'example.test'

export function zoneText(serial = 1, extra = ''): string {
  return `$ORIGIN example.test.
$TTL 3600
@ IN SOA ns1 hostmaster ${serial} 3600 900 604800 300
@ IN NS ns1
ns1 IN A 192.0.2.1
www 300 IN A 192.0.2.10
${extra}`
}

export interface Harness {
  knot: Knot
  dnsctl: Dnsctl
  base: string
  config: Config
  db: Kysely<DB>
  close(): Promise<void>
  /** fetch with a JSON body. */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>
}

export function testConfig(knot: Knot, stateDir: string, extra: Record<string, string> = {}): Config {
  return loadDnsctlConfig([], {
    DNSCTL_STATE_DIR: stateDir,
    DNSCTL_KNOT_SOCKET: knot.controlSocket,
    DNSCTL_KNOT_ZONES_DIR: knot.zonesDir,
    DNSCTL_KNOT_ADDRESS: `127.0.0.1:${knot.port}`,
    DNSCTL_VERIFY_TIMEOUT: '5s',
    DNSCTL_LOG_LEVEL: 'silent',
    ...extra,
  })
}

export async function startHarness(
  options: { knot?: Knot; env?: Record<string, string>; now?: () => Date; auditSweepIntervalMs?: number } = {},
): Promise<Harness> {
  const knot = options.knot ?? (await startKnot())
  const dir = tempDir('dnsctl-test-')
  const config = testConfig(knot, dir.path, options.env)
  const database = await openDatabase<DB>({ url: config.database, migrations })
  const logger = process.env.DNSCTL_TEST_LOG
    ? createLogger({ name: 'dnsctl', level: 'debug', destination: process.stderr })
    : createLogger({ name: 'dnsctl', level: 'silent', destination: new PassThrough() })
  const dnsctl = await buildServer(config, {
    db: database.db,
    logger,
    ...(options.now ? { now: options.now } : {}),
    ...(options.auditSweepIntervalMs ? { auditSweepIntervalMs: options.auditSweepIntervalMs } : {}),
  })
  await dnsctl.start()
  const base = await dnsctl.app.listen({ port: 0, host: '127.0.0.1' })
  if (dnsctl.metricsApp && config.metricsListen) {
    await dnsctl.metricsApp.listen({ port: config.metricsListen.port, host: config.metricsListen.host })
  }
  return {
    knot,
    dnsctl,
    base,
    config,
    db: database.db,
    async close() {
      await dnsctl.close()
      await database.close()
      if (!options.knot) await knot.stop()
      dir.remove()
    },
    call(method, path, body, headers = {}) {
      return fetch(base + path, {
        method,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    },
  }
}

export { finishConfig }

// biome-ignore lint/suspicious/noExplicitAny: test bodies are checked field by field
export async function json(res: Response): Promise<Record<string, any>> {
  // biome-ignore lint/suspicious/noExplicitAny: as above
  return (await res.json()) as Record<string, any>
}
