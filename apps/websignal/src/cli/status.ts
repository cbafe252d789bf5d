/**
 * `websignal status` (like the gates' status and `fail2ban-client status`): whether the running
 * agent answers on its listener and is ready (or which checks fail), whether it holds the
 * publisher lease, how recent its newest line is and what waits to be sent; and per input, how
 * far the saved read position is behind the file. Reads the config, the saved positions and the
 * agent's own `/readyz` and `/metrics`; never the store, the control plane or the logs' contents.
 * A stopped agent is a state, not a failure (exit 0).
 */
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { askLocal, metricValue } from '@gatehouse/kit/cli/live-metrics.ts'
import { paint } from '@gatehouse/kit/cli/output.ts'
import { formatListenAddress } from '@gatehouse/kit/net.ts'
import { escapeTerminal, terminalJson } from '@gatehouse/kit/terminal.ts'
import { type Config, configPath, loadWebsignalConfig, storeAddress } from '../config.ts'
import type { Io } from './io.ts'

export interface AgentStatus {
  listen: string
  /** False: nothing answers on the listener (stopped, or listening elsewhere). */
  running: boolean
  ready: boolean | null
  /** The readiness checks that fail, by name. */
  failing: Record<string, string> | null
  /** Holds the publisher lease (this instance sends the namespace's signals). */
  publisher: boolean | null
  /** While the lease holder's batches do not reach the control plane: since when and why. */
  publish_failing: { since: string; cause: string } | null
  /** Time of the newest parsed line, RFC 3339. */
  newest_line: string | null
  outbox: number | null
  signals_published: number | null
  signals_dropped: number | null
  store_failures: number | null
}

export interface InputStatus {
  path: string
  site: string
  format: string
  /** The file's size, or null when it cannot be read. */
  size: number | null
  /** The saved read position in the current file, or null (none saved, or saved for a file rotated away). */
  position: number | null
  /** Bytes not read yet as of the saved position (read lines are saved once stored: up to a tick late). */
  behind: number | null
  state: 'caught_up' | 'behind' | 'no_position' | 'rotated' | 'missing' | 'unreadable'
  /** For `unreadable`: the error code. */
  error?: string
  /**
   * Rotated-away files the agent was still reading at the saved position (until the server
   * reopens its log): where each is now, and how much of it is not read yet (null: not found).
   */
  draining: Array<{ path: string | null; behind: number | null }>
}

export interface WebsignalStatus {
  config: string
  agent: AgentStatus
  inputs: InputStatus[]
  /** Saved positions could not be read (the state directory's permissions): why. */
  positions_error: string | null
  /** When the positions were last saved (a running agent saves them each tick while it reads), RFC 3339. */
  positions_saved_at: string | null
  store: string
  control_plane: string | null
  shadow: boolean
}

type FilePosition = { dev: number; ino: number; offset: number }
type Position = FilePosition & { draining?: Array<FilePosition & { path?: string }> }

/** A rotated file still read: unread bytes, when it is still where the agent last saw it. */
function drainingStatus(d: FilePosition & { path?: string }): InputStatus['draining'][number] {
  if (typeof d.path !== 'string') return { path: null, behind: null }
  try {
    const st = statSync(d.path)
    if (st.ino === d.ino && st.dev === d.dev) return { path: d.path, behind: Math.max(0, st.size - d.offset) }
  } catch {
    // Gone: said as not found.
  }
  return { path: d.path, behind: null }
}

/** The saved positions (`state_dir/offsets.json`), read without creating anything. */
function readPositions(stateDir: string): {
  positions: Record<string, Position>
  error: string | null
  savedAt: string | null
} {
  const file = join(stateDir, 'offsets.json')
  let text: string
  let savedAt: string | null = null
  try {
    text = readFileSync(file, 'utf8')
    savedAt = statSync(file).mtime.toISOString()
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    return { positions: {}, error: code === 'ENOENT' ? null : `${file}: ${code}`, savedAt: null }
  }
  try {
    return { positions: JSON.parse(text) as Record<string, Position>, error: null, savedAt }
  } catch {
    // The agent treats a damaged file as absent; so does this.
    return { positions: {}, error: null, savedAt: null }
  }
}

function inputStatus(input: Config['inputs'][number], saved: Position | undefined): InputStatus {
  const stored = Array.isArray(saved?.draining) ? saved.draining : []
  const base = { path: input.path, site: input.site, format: input.format, draining: stored.map(drainingStatus) }
  let size: number
  let ino: number
  let dev: number
  try {
    const st = statSync(input.path)
    if (!st.isFile()) return { ...base, size: null, position: null, behind: null, state: 'unreadable', error: 'EISDIR' }
    ;({ size, ino, dev } = st)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error'
    return {
      ...base,
      size: null,
      position: null,
      behind: null,
      state: code === 'ENOENT' ? 'missing' : 'unreadable',
      ...(code === 'ENOENT' ? {} : { error: code }),
    }
  }
  if (!saved || !Number.isSafeInteger(saved.offset))
    return { ...base, size, position: null, behind: null, state: 'no_position' }
  // A rotated file still read and since renamed back to the path: the agent reads on in it there.
  const back = stored.find((d) => d.ino === ino && d.dev === dev && Number.isSafeInteger(d.offset))
  const at = saved.ino === ino && saved.dev === dev ? saved : back
  if (!at) return { ...base, size, position: null, behind: size, state: 'rotated' }
  const draining = back ? stored.filter((d) => d !== back).map(drainingStatus) : base.draining
  const behind = Math.max(0, size - at.offset)
  return { ...base, draining, size, position: at.offset, behind, state: behind === 0 ? 'caught_up' : 'behind' }
}

async function agentStatus(c: Config): Promise<AgentStatus> {
  const listen = formatListenAddress(c.listen)
  const [ready, metrics] = await Promise.all([askLocal(c.listen, '/readyz'), askLocal(c.listen, '/metrics')])
  if (!ready) {
    return {
      listen,
      running: false,
      ready: null,
      failing: null,
      publisher: null,
      publish_failing: null,
      newest_line: null,
      outbox: null,
      signals_published: null,
      signals_dropped: null,
      store_failures: null,
    }
  }
  let failing: Record<string, string> = {}
  let body: { error?: { checks?: Record<string, string> }; publishing?: { failing_since?: string; cause?: string } } =
    {}
  try {
    body = JSON.parse(ready.text)
  } catch {
    if (ready.status !== 200) failing = { readyz: `answered ${ready.status}` }
  }
  if (ready.status !== 200 && body.error) failing = body.error.checks ?? {}
  const pf = body.publishing
  const publishFailing =
    typeof pf?.failing_since === 'string' && typeof pf.cause === 'string'
      ? { since: pf.failing_since, cause: pf.cause }
      : null
  const m = metrics?.status === 200 ? metrics.text : ''
  const value = (name: string) => (m ? (metricValue(m, name) ?? null) : null)
  const newest = value('websignal_last_observation_timestamp_seconds')
  const owner = value('websignal_publisher_owner')
  return {
    listen,
    running: true,
    ready: ready.status === 200,
    failing,
    publisher: owner === null ? null : owner === 1,
    publish_failing: publishFailing,
    newest_line: newest ? new Date(newest * 1000).toISOString() : null,
    outbox: value('websignal_signal_outbox_depth'),
    signals_published: value('websignal_signals_published_total'),
    signals_dropped: value('websignal_signals_dropped_total'),
    store_failures: value('websignal_store_failures_total'),
  }
}

export async function websignalStatus(c: Config): Promise<WebsignalStatus> {
  const { positions, error, savedAt } = readPositions(c.stateDir)
  const cp = c.controlPlane
  return {
    config: c.configPath,
    agent: await agentStatus(c),
    inputs: c.inputs.map((i) => inputStatus(i, positions[i.path])),
    positions_error: error,
    positions_saved_at: savedAt,
    store: `${storeAddress(c.store)}, namespace ${c.store.namespace}`,
    control_plane: cp ? `${cp.url} as ${cp.instanceId}` : null,
    shadow: c.shadow,
  }
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`
  return `${(n / 1024 ** 3).toFixed(1)} GiB`
}

function ago(iso: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000))
  return s < 120 ? `${s} s ago` : s < 7200 ? `${Math.round(s / 60)} min ago` : `${Math.round(s / 3600)} h ago`
}

/** Younger than this, a saved position a little behind is a running agent's normal state. */
const FRESH_POSITION_MS = 10_000

const INPUT_STATE: Record<InputStatus['state'], (i: InputStatus, s: WebsignalStatus, now: number) => string> = {
  caught_up: (i) => paint('green', `caught up (${bytes(i.size!)} read)`),
  behind: (i, s, now) => {
    const at = `(at ${bytes(i.position!)} of ${bytes(i.size!)})`
    const saved = s.positions_saved_at
    // The agent saves what it stored, once a tick: a log written to all the time is always a
    // little ahead of the saved position, which is no backlog.
    if (s.agent.running && saved !== null && now - Date.parse(saved) < FRESH_POSITION_MS) {
      return `reading: ${bytes(i.behind!)} written since the position saved ${ago(saved, now)} ${at}`
    }
    return paint('yellow', `${bytes(i.behind!)} behind ${at}${saved ? `, position saved ${ago(saved, now)}` : ''}`)
  },
  no_position: () => 'no read position saved yet (the agent has not run, or has read nothing of it)',
  rotated: (i) => `rotated since the last saved position (the new file, ${bytes(i.size!)}, is read from its start)`,
  missing: () => 'not there yet (waited for; read from its start when it appears)',
  unreadable: (i) => paint('red', `cannot be read (${i.error})`),
}

export function formatStatus(s: WebsignalStatus, now = Date.now()): string {
  const a = s.agent
  const lines = [`config: ${escapeTerminal(s.config)}`]
  if (!a.running) {
    lines.push(`agent: ${paint('yellow', `not answering on ${a.listen}`)} (stopped, or listening elsewhere)`)
  } else {
    const failing = Object.entries(a.failing ?? {})
      .map(([k, v]) => `${k}: ${v}`)
      .join('; ')
    lines.push(
      `agent: running on ${a.listen}, ${a.ready ? paint('green', 'ready') : paint('red', `not ready (${escapeTerminal(failing)})`)}${
        // Only a publishing agent takes the lease.
        a.publisher === null || s.shadow || !s.control_plane
          ? ''
          : a.publisher
            ? a.publish_failing
              ? `, ${paint('red', 'publishing fails')} (holds the lease)`
              : ', publishing (holds the lease)'
            : ', standing by (another instance holds the lease, or none does yet)'
      }`,
    )
    if (a.publish_failing)
      lines.push(
        paint(
          'red',
          `  signals do not reach the control plane since ${a.publish_failing.since} (${ago(a.publish_failing.since, now)}): ${escapeTerminal(a.publish_failing.cause)}`,
        ),
      )
    lines.push(
      `  newest line: ${a.newest_line ? `${a.newest_line} (${ago(a.newest_line, now)})` : 'none yet'}; signals waiting: ${a.outbox ?? '?'}, published since start: ${a.signals_published ?? '?'}, dropped: ${a.signals_dropped ?? '?'}; store failures: ${a.store_failures ?? '?'}`,
    )
  }
  for (const i of s.inputs) {
    lines.push(
      `input ${escapeTerminal(i.path)} (site ${escapeTerminal(i.site)}, ${i.format}): ${INPUT_STATE[i.state](i, s, now)}`,
    )
    for (const d of i.draining)
      lines.push(
        d.behind === null
          ? `  rotated file ${d.path === null ? '(deleted)' : escapeTerminal(d.path)} still read at the saved position: not found (a restart cannot read the rest of it)`
          : `  rotated file ${escapeTerminal(d.path!)} still read until the server reopens its log: ${d.behind === 0 ? 'caught up' : `${bytes(d.behind)} behind`}`,
      )
  }
  if (s.positions_error) lines.push(paint('red', `read positions cannot be read: ${escapeTerminal(s.positions_error)}`))
  lines.push(`store: ${escapeTerminal(s.store)} (not contacted)`)
  lines.push(
    s.shadow
      ? 'shadow mode: nothing is published'
      : s.control_plane
        ? `control plane: ${escapeTerminal(s.control_plane)}`
        : 'control plane: none (signals are detected, not published)',
  )
  return `${lines.join('\n')}\n`
}

export async function statusCommand(opts: { config?: string; json?: boolean }, io: Io): Promise<void> {
  // Status never sends a token or a secret: the files holding them may be the service user's alone.
  const c = loadWebsignalConfig(configPath(opts.config), process.env, { readSecretFiles: false })
  const status = await websignalStatus(c)
  io.out(opts.json ? `${terminalJson(status, 2)}\n` : formatStatus(status))
}
