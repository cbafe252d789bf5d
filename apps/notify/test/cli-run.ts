/** Running the notify command line as an operator does: a child process, its exit code and output. */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'

export const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** `notify ARGS` with only PATH (and `env`) in its environment; `input` is its standard input. */
export function cli(args: string[], env: NodeJS.ProcessEnv = {}, input?: string): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', ...env },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c) => (stdout += c))
    child.stderr.on('data', (c) => (stderr += c))
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }))
    child.stdin.end(input ?? '')
  })
}

/** A failure is one line on stderr, prefixed with the program's name. */
export function oneLine(r: { stderr: string }): void {
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
  assert.match(r.stderr, /^notify: /)
}
