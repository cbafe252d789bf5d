/**
 * Builds the gates' splice helper (native/splice-relay.c, see src/splice-relay.ts) with the
 * system C compiler (`$CC`, else `cc`). Run by the root's postinstall after `npm ci`; also
 * `node packages/kit/scripts/build-splice-relay.ts`. Without a compiler the gates relay every
 * connection in-process, so a failure is reported in one line and never fails the install.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, renameSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { SPLICE_HELPER_PATH } from '../src/splice-relay.ts'

const source = fileURLToPath(new URL('../native/splice-relay.c', import.meta.url))

/** Compile the helper to `out`; returns an error message, or undefined when it is built. */
export function buildSpliceRelay(out: string = SPLICE_HELPER_PATH): string | undefined {
  if (process.platform !== 'linux') return 'splice(2) is Linux only'
  mkdirSync(dirname(out), { recursive: true })
  const partial = `${out}.${process.pid}`
  const cc = process.env.CC || 'cc'
  const r = spawnSync(cc, ['-O2', '-Wall', '-Wextra', '-Werror', '-o', partial, source], { encoding: 'utf8' })
  if (r.error || r.status !== 0) {
    rmSync(partial, { force: true })
    return r.error ? `${cc}: ${r.error.message}` : r.stderr.trim().split('\n')[0] || `${cc} exited ${r.status}`
  }
  // Renamed into place: a gate starting meanwhile finds the old helper or the new one.
  renameSync(partial, out)
  return undefined
}

if (import.meta.main) {
  const error = buildSpliceRelay(process.argv[2])
  if (error) process.stderr.write(`splice relay helper not built (${error}): the gates relay in-process\n`)
  else process.stderr.write("built the gates' splice relay helper\n")
}
