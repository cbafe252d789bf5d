/**
 * `websignal doctor`: validate the config, secret files, pattern lists and inputs, and
 * summarise them, without touching the store or the network.
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { StartupError } from '@gatehouse/kit'
import { controlPlaneCertificateReport } from '@gatehouse/kit/certificate-expiry.ts'
import { type ControlPlane, configPath, loadWebsignalConfig, storeAddress } from '../config.ts'
import { BUILTIN_PATTERN_DIR, checkPatternCost, loadPatternLists, PatternError } from '../detect/patterns.ts'
import type { Io } from './io.ts'

export function doctorCommand(opts: { config?: string }, io: Io): void {
  const path = configPath(opts.config)
  const c = loadWebsignalConfig(path)
  const problems: string[] = []
  let lists: ReturnType<typeof loadPatternLists> = []
  try {
    lists = loadPatternLists([BUILTIN_PATTERN_DIR, ...c.patternDirs], c.disabledLists)
    for (const slow of checkPatternCost(lists)) problems.push(`pattern too slow on long input: ${slow}`)
  } catch (err) {
    if (!(err instanceof PatternError)) throw err
    problems.push(err.message)
  }
  const lines = [`config ${path}: ok`]
  for (const [i, inp] of c.inputs.entries()) {
    let state: string
    try {
      const st = statSync(inp.path)
      if (!st.isFile()) problems.push(`inputs[${i}].path: ${inp.path} is not a regular file`)
      accessSync(inp.path, constants.R_OK)
      state = 'readable'
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT') {
        try {
          accessSync(dirname(inp.path), constants.R_OK | constants.X_OK)
          state = 'not there yet (waited for)'
        } catch {
          problems.push(`inputs[${i}].path: directory ${dirname(inp.path)} cannot be read`)
          state = 'directory unreadable'
        }
      } else {
        problems.push(`inputs[${i}].path: ${inp.path} cannot be read (${code})`)
        state = 'unreadable'
      }
    }
    lines.push(`input ${inp.path}: format ${inp.format}${inp.syslog ? ' in syslog' : ''}, site ${inp.site}, ${state}`)
  }
  const cp = c.controlPlane
  if (cp?.auth.kind === 'mtls' || cp?.auth.ca) {
    const a = cp.auth as { clientCert?: string; clientKey?: string; ca?: string }
    for (const [what, p] of [
      ['client_cert', a.clientCert],
      ['client_key', a.clientKey],
      ['ca', a.ca],
    ] as const) {
      if (!p) continue
      let pem: Buffer
      try {
        pem = readFileSync(p)
      } catch (err) {
        problems.push(`control_plane.${what}: ${p} cannot be read (${(err as NodeJS.ErrnoException).code})`)
        continue
      }
      if (what === 'client_key') continue
      try {
        const report = controlPlaneCertificateReport(what === 'client_cert' ? { clientCert: pem } : { ca: pem })
        lines.push(...report.lines)
        problems.push(...report.problems)
      } catch (err) {
        problems.push(`control_plane.${what}: ${p} is not a certificate (${(err as Error).message})`)
      }
    }
  }
  const store = storeAddress(c.store)
  lines.push(
    `store ${store}, namespace ${c.store.namespace} (not contacted)`,
    `patterns: ${lists.map((l) => `${l.name} (${l.patterns.length})`).join(', ')}`,
    `window ${c.windowMs / 1000}s; thresholds: ${c.thresholds.minSuspiciousHits} suspicious hits, or ${c.thresholds.minRequests} requests over ${c.thresholds.minDistinctPaths} distinct paths with error ratio >= ${c.thresholds.minErrorRatio}`,
    c.shadow
      ? 'shadow mode: detection only, nothing sent or queued'
      : cp
        ? `publishing to ${cp.url} as ${cp.instanceId} (${cp.auth.kind === 'token' ? `bearer token from ${tokenSource(cp)}` : 'mutual TLS'}; not contacted; SIGHUP reads the credentials again)`
        : 'no control_plane: signals are detected but not published',
    `listen ${c.listen.host}:${c.listen.port}`,
  )
  if (problems.length > 0) throw new StartupError(problems)
  for (const w of c.warnings) lines.push(`warning: ${w}`)
  io.out(`${lines.join('\n')}\n`)
}

/** Where the bearer token was read (a file, the config file, the environment), never the token. */
function tokenSource(cp: ControlPlane): string {
  try {
    return cp.readToken?.().from ?? 'the config'
  } catch {
    // Read a moment ago by the config loader; a file replaced since is the next SIGHUP's concern.
    return 'the config'
  }
}
