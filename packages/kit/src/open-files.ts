/**
 * The process's open-file limit. A server past it cannot accept (libuv then closes waiting
 * connections without a callback, so nothing is logged or counted) and cannot open anything
 * else: database files, outgoing connections, child processes. The gates (gate-limits.ts) and
 * HTTP apps (http.ts) keep their connections below it.
 */
import { readFileSync } from 'node:fs'

/** The soft limit on open files (Node raises it to the hard limit at start), or undefined off Linux. */
export function openFileLimit(limits = () => readFileSync('/proc/self/limits', 'latin1')): number | undefined {
  try {
    const soft = /^Max open files\s+(\d+)/m.exec(limits())?.[1]
    return soft === undefined ? undefined : Number(soft)
  } catch {
    return undefined
  }
}
