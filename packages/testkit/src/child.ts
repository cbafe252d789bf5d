/**
 * Long-running child processes for test servers: output kept in a log file (shown when
 * startup fails), readiness by a log line or a probe, and a stop that escalates.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { createWriteStream, openSync, readFileSync } from 'node:fs'
import { StringDecoder } from 'node:string_decoder'
import { setTimeout as delay } from 'node:timers/promises'
import { killQuietly, onExit } from './cleanup.ts'

export interface StartOptions {
  command: string
  args: string[]
  env?: NodeJS.ProcessEnv
  cwd?: string
  /** Where stdout and stderr go. */
  logFile: string
  /** Ready when a line of output matches. */
  readyLine?: RegExp
  /** Or ready when this resolves true (polled). */
  probe?: () => Promise<boolean>
  /**
   * Startup deadline in ms (default 60 s). It only tells a hung start from a slow one: on two
   * shared cores a Node server's start-up has taken over 20 s.
   */
  timeoutMs?: number
  /** Name for error messages. */
  name: string
}

export interface Child {
  process: ChildProcess
  pid: number
  stop(signal?: NodeJS.Signals): Promise<void>
  /**
   * What this process printed so far, as received (the newest 8 MiB at most). Kept in memory
   * rather than read back from the log file: the file is written asynchronously, so a read
   * right after the ready line, or after a line a test waited for, could miss it.
   */
  log(): string
}

/** Output kept for `log()`; past this the older half is dropped. */
const KEPT_OUTPUT = 8 * 1024 * 1024

function tail(path: string, lines = 30): string {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n')
  } catch {
    return ''
  }
}

/** Wait for `p`, at most `ms`. */
async function settle(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([p, new Promise<void>((r) => (timer = setTimeout(r, ms)))])
  clearTimeout(timer)
}

/** Start a server process and wait until it is ready; on failure the error carries its log tail. */
export async function startChild(options: StartOptions): Promise<Child> {
  // Opened here, not by the stream: its asynchronous open waits for a thread of libuv's pool,
  // and on a busy machine ran after a short test had ended and removed the log's folder (ENOENT
  // raised outside any test). A log file that cannot be opened is an error of start() itself.
  const out = createWriteStream(options.logFile, { fd: openSync(options.logFile, 'a') })
  const child = spawn(options.command, options.args, {
    env: options.env ?? process.env,
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const unregister = onExit(() => killQuietly(child.pid))
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined
  const exitPromise = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = { code, signal }
      unregister()
      resolve()
    }),
  )
  // The child's own children (sshd's per-connection processes, a shell's background job)
  // inherit its stdout and stderr and may write after it exited. Writing to the log file once
  // it is being ended raises "write after end" outside any test, so later output is dropped.
  let logOpen = true
  const closeLog = () => {
    if (!logOpen) return Promise.resolve()
    logOpen = false
    child.stdout!.destroy()
    child.stderr!.destroy()
    return new Promise<void>((r) => out.end(r))
  }
  // 'exit' can come before the last output has been read: 'close' waits for the pipes, but a
  // grandchild may hold them open for good, so the wait is bounded.
  const pipesClosed = new Promise<void>((resolve) => child.once('close', () => resolve()))
  /** After the child exited: keep its last lines, then close the log. */
  const finishLog = async () => {
    await settle(pipesClosed, 500)
    await closeLog()
  }
  let ready = false
  let output = ''
  let readyFrom = 0
  const onData = (chunk: Buffer, decoder: StringDecoder) => {
    if (!logOpen) return
    out.write(chunk)
    output += decoder.write(chunk)
    if (output.length > KEPT_OUTPUT) {
      const dropped = output.length - KEPT_OUTPUT / 2
      output = output.slice(dropped)
      readyFrom = Math.max(0, readyFrom - dropped)
    }
    if (options.readyLine && !ready) {
      // Only the text not yet searched, plus a line's worth before it for a line split across chunks.
      if (options.readyLine.test(output.slice(Math.max(0, readyFrom - 8192)))) ready = true
      readyFrom = output.length
    }
  }
  // One decoder a stream: a character split across two chunks arrives whole.
  const stdoutText = new StringDecoder('utf8')
  const stderrText = new StringDecoder('utf8')
  child.stdout!.on('data', (chunk: Buffer) => onData(chunk, stdoutText))
  child.stderr!.on('data', (chunk: Buffer) => onData(chunk, stderrText))
  child.once('error', (err) => {
    out.write(`spawn error: ${err.message}\n`)
    exited ??= { code: -1, signal: null }
  })

  const deadline = Date.now() + (options.timeoutMs ?? 60_000)
  while (!ready) {
    if (exited) {
      await finishLog()
      throw new Error(
        `${options.name} exited during startup (code ${exited.code}, signal ${exited.signal}):\n${tail(options.logFile)}`,
      )
    }
    if (Date.now() > deadline) {
      killQuietly(child.pid)
      await closeLog()
      throw new Error(
        `${options.name} was not ready within ${options.timeoutMs ?? 60_000} ms:\n${tail(options.logFile)}`,
      )
    }
    if (options.probe && (await options.probe().catch(() => false))) ready = true
    else await delay(25)
  }

  return {
    process: child,
    pid: child.pid!,
    log: () => output,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (!exited) {
        killQuietly(child.pid, signal)
        // A test may have paused the process (SIGSTOP); stopped, it would take the signal only
        // when continued, so the stop waited the whole 10 s before SIGKILL.
        killQuietly(child.pid, 'SIGCONT')
        const timer = setTimeout(() => killQuietly(child.pid), 10_000)
        await exitPromise
        clearTimeout(timer)
      }
      await finishLog()
    },
  }
}
