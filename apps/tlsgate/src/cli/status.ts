/**
 * `tlsgate status` (like `fail2ban-client status`): the kit's gate status (routes, the running
 * gate's connection results, fingerprints by verdict, the last control-plane sync) with the TLS
 * gate's refusals, read from the config and the store without touching the running gate.
 */
import { formatGateStatus, type GateStatusInputs, gateStatusReport } from '@gatehouse/kit/cli/gate-status.ts'
import { formatListenAddress } from '@gatehouse/kit/net.ts'
import { existsSync } from '@gatehouse/kit/startup-builtins.ts'
import { terminalJson } from '@gatehouse/kit/terminal.ts'
import { loadServeConfig } from '../config.ts'
import { readStore } from './entries.ts'
import type { Io } from './io.ts'

export async function statusCommand(flags: Record<string, unknown>, json: boolean, io: Io): Promise<void> {
  const config = loadServeConfig({ flags, fileExists: existsSync, inspect: true })
  const inputs: GateStatusInputs = {
    app: 'tlsgate',
    dbPath: config.dbPath,
    routes: config.routes.map((r) => ({ listen: r.name, backend: formatListenAddress(r.backend) })),
    metricsListen: config.metricsListen,
    unknownClients: config.enforceUnknown ? 'refused (--enforce-unknown)' : 'let through',
    counter: { column: 'refused_count', key: 'refused_connections', label: 'refused connections' },
    controlPlane: config.controlPlaneTarget,
    maxFingerprints: config.maxFingerprints,
  }
  const report = await readStore(config.dbPath, ({ db }) => gateStatusReport(inputs, db))
  io.out(json ? `${terminalJson(report, 2)}\n` : formatGateStatus(inputs, report))
}
