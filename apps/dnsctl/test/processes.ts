/** dnsctl as a user runs it: `dnsctl serve` as a child on a real knotd, and CLI commands as child processes. */
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Child, freePort, type Knot, startChild } from '@gatehouse/testkit'

export const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')

/** Run `dnsctl ARGS` to completion; stdin gets `input` (or nothing). */
export function cli(args: string[], env: NodeJS.ProcessEnv = {}, input?: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }))
    child.stdin.end(input ?? '')
  })
}

export interface ServeProcess {
  server: Child
  /** `http://127.0.0.1:PORT` of the API. */
  base: string
  /** DNSCTL_CONFIG pointing at the server's config file: the CLI finds the API through it. */
  env: NodeJS.ProcessEnv
}

/** `dnsctl serve` reading a config file in `dir` (listen, state, knot; `extra` merged in), ready. */
export async function startServe(knot: Knot, dir: string, extra: Record<string, unknown> = {}): Promise<ServeProcess> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const config = join(dir, 'dnsctl.json')
  writeFileSync(
    config,
    JSON.stringify({
      listen: `127.0.0.1:${port}`,
      stateDir: join(dir, 'state'),
      knot: { socket: knot.controlSocket, zonesDir: knot.zonesDir, address: `127.0.0.1:${knot.port}` },
      logLevel: 'warn',
      ...extra,
    }),
  )
  const env = { DNSCTL_CONFIG: config, DNSCTL_URL: undefined }
  const server = await startChild({
    name: 'dnsctl',
    command: process.execPath,
    args: [MAIN],
    logFile: join(dir, 'dnsctl.log'),
    env: { ...process.env, ...env } as NodeJS.ProcessEnv,
    probe: async () => (await fetch(`${base}/healthz`)).ok,
  })
  return { server, base, env }
}
