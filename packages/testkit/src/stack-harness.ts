/**
 * Apps' `stack.ts` started as scripts/stack.ts starts them (`npm start`), in a temporary
 * GATEHOUSE_HOME with the ports shifted, and their printed commands pasted into a clean shell:
 * the stack tests of the apps that build on one another (tlsgate, websignal).
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import type { StackContext, StackService } from '../../kit/src/stack.ts'

export interface StackHarness {
  /** The stack's GATEHOUSE_HOME: each app's state in `<home>/<app>`. */
  home: string
  /** Every line the apps' stacks said, as `[app] line`. */
  said: string[]
  /** A demo port moved by the harness's offset. */
  port(base: number): number
  /** The context scripts/stack.ts gives an app, with the services started before it. */
  context(app: string, started: Record<string, StackService>): StackContext
  /** One line pasted in /bin/sh from the repository root, as a user's clean shell (system node) runs it. */
  paste(line: string): { status: number | null; stdout: string; stderr: string }
  /** The command a service printed (`$ …` in its notes) that starts with `prefix`. */
  command(service: StackService, prefix: string): string
  /** Poll `check` until it returns a value, at most `ms`; the failure shows what the stacks said. */
  eventually<T>(what: string, ms: number, check: () => T | undefined): Promise<T>
  remove(): void
}

/**
 * `lane` (0–9) keeps test files that run at once off each other's ports: each draws its offset
 * from the multiples of 100, moved by ten times its lane.
 *
 * @example const stack = stackHarness('websignal-stack-', 5); const edgegate = await startEdgegate(stack.context('edgegate', {}))
 */
export function stackHarness(prefix: string, lane: number): StackHarness {
  const root = join(import.meta.dirname, '..', '..', '..')
  // Below the ephemeral range (other tests bind port 0 there) and off the demo's own ports.
  const offset = 12_000 + Math.floor(Math.random() * 100) * 100 + lane * 10
  const home = mkdtempSync(join(tmpdir(), prefix))
  const said: string[] = []
  const port = (base: number) => base + offset
  return {
    home,
    said,
    port,
    context(app, started) {
      const dataDir = join(home, app)
      mkdirSync(dataDir, { recursive: true })
      return { root, dataDir, node: process.execPath, log: (line) => said.push(`[${app}] ${line}`), started, port }
    },
    paste(line) {
      const r = spawnSync('/bin/sh', ['-c', line], {
        cwd: root,
        env: { PATH: '/usr/bin:/bin', HOME: home, LANG: 'C.UTF-8', GATEHOUSE_HOME: home },
        encoding: 'utf8',
        timeout: 60_000,
      })
      return { status: r.status, stdout: r.stdout, stderr: r.stderr }
    },
    command(service, start) {
      const line = service.notes?.map((n) => /^\$ (.+)$/.exec(n)?.[1]).find((c) => c?.startsWith(start))
      assert.ok(line, `no printed command starting with ${start}:\n${service.notes?.join('\n')}`)
      return line
    },
    async eventually(what, ms, check) {
      const deadline = Date.now() + ms
      for (;;) {
        const v = check()
        if (v !== undefined) return v
        if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms / 1000} s\n${said.join('\n')}`)
        // Each check pastes a command (a Node process): a quarter second apart, not a busy loop.
        await delay(250)
      }
    },
    remove() {
      rmSync(home, { recursive: true, force: true })
    },
  }
}
