/**
 * Failpoints for the crash-safety tests: when a configured point is reached, the process
 * kills itself with SIGKILL (no cleanup, no flush), exactly as a power cut or OOM kill would.
 * Configured only through DNSCTL_FAILPOINTS; empty in production.
 */
export const FAILPOINTS = [
  'publish:after-intent',
  'publish:after-history',
  'publish:after-rename',
  'publish:after-reload',
  'publish:after-audit',
  'create:after-file',
  'create:after-conf',
  'delete:after-conf',
  'delete:after-row',
] as const

export type Failpoint = (typeof FAILPOINTS)[number]

export class Failpoints {
  readonly #armed: Set<string>
  constructor(names: readonly string[]) {
    for (const n of names) {
      if (!(FAILPOINTS as readonly string[]).includes(n)) {
        throw new TypeError(`unknown failpoint ${n} (known: ${FAILPOINTS.join(', ')})`)
      }
    }
    this.#armed = new Set(names)
  }

  hit(name: Failpoint): void {
    if (this.#armed.has(name)) process.kill(process.pid, 'SIGKILL')
  }
}
