/**
 * Ports, temporary folders and required binaries for test servers.
 */
import { execFileSync } from 'node:child_process'
import { createSocket } from 'node:dgram'
import {
  accessSync,
  constants,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { onExit, removeQuietly } from './cleanup.ts'

/**
 * A port free on `host` right now, for TCP and UDP alike (DNS servers bind both).
 *
 * Ports come from below the kernel's ephemeral range: a port the OS picked with bind(0) can be
 * taken again as the source port of any outgoing connection before the child under test binds
 * it, which made parallel suites fail with EADDRINUSE. Each process walks the range from a random
 * start and never hands out the same port twice, and every test process on the machine reserves
 * a port (`reservePort`) before it even probes it: without that, two test files could hand out
 * one port, or one file's brief probe could hold the port at the moment another file's child
 * binds it. A child under test failed to bind its free port once so in a full run on a slow
 * host (dnsctl's crash test, 2026-11-29).
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const [low, high] = portRange()
  for (let tries = 0; tries < 200; tries++) {
    const port = low + (nextOffset++ % (high - low))
    if (handedOut.has(port)) continue
    if (!reservePort(port)) continue
    handedOut.add(port)
    // A port something else holds stays reserved (and skipped) by this process.
    if (!(await canBind(port, host))) continue
    return port
  }
  throw new Error(`no free port found on ${host} between ${low} and ${high}`)
}

const handedOut = new Set<number>()
let nextOffset = Math.floor(Math.random() * 1_000_000)

/**
 * The machine-wide reservations: a folder per port holding a file per reserving process, named
 * by its pid. A process writes its own file first and then looks for others: of two processes
 * reserving one port at once, the second to look sees the first (both may see each other, and
 * then both pass the port by), so no port goes to two live processes. Files are removed when
 * their process exits (and the port's folder with the last of them); one left by a process that
 * died without its exit hook (SIGKILL) is ignored, since its pid is no longer running, and removed.
 */
const RESERVATIONS = join(tmpdir(), 'gatehouse-test-ports')
let reservations: string[] | undefined

/** Reserve `port` for this process machine-wide; false when a running process holds it. */
export function reservePort(port: number): boolean {
  if (reservations === undefined) {
    const mine: string[] = []
    reservations = mine
    onExit(() => {
      for (const file of mine) {
        rmSync(file, { force: true })
        try {
          // The port's folder too once no process holds the port, so they do not pile up.
          rmdirSync(dirname(file))
        } catch {
          // Another reservation is in it.
        }
      }
    })
  }
  const folder = join(RESERVATIONS, String(port))
  const file = join(folder, String(process.pid))
  for (let attempt = 0; ; attempt++) {
    mkdirSync(folder, { recursive: true })
    try {
      writeFileSync(file, '')
      break
    } catch (err) {
      // Its last holder removed the folder, empty, as it exited: make it again.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 5) throw err
    }
  }
  for (const name of readdirSync(folder)) {
    if (name === String(process.pid)) continue
    if (running(Number.parseInt(name, 10))) {
      rmSync(file, { force: true })
      return false
    }
    // Left by a process that was killed: its name is its own, so no live reservation goes with it.
    rmSync(join(folder, name), { force: true })
  }
  reservations.push(file)
  return true
}

function running(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: running, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

let range: [number, number] | undefined
function portRange(): [number, number] {
  if (range) return range
  let ephemeralLow = 32768
  try {
    const text = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
    const first = Number.parseInt(text.trim().split(/\s+/)[0] ?? '', 10)
    if (Number.isInteger(first)) ephemeralLow = first
  } catch {
    // Not Linux: the usual default range start is a fine guess.
  }
  // Fall back to a fixed window above the well-known ports when the ephemeral range starts low.
  range = ephemeralLow > 12_000 ? [10_000, ephemeralLow] : [40_000, 60_000]
  return range
}

function canBind(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const tcp = createServer()
    tcp.unref()
    tcp.once('error', () => resolve(false))
    tcp.listen({ port, host, exclusive: true }, () => {
      const udp = createSocket(host.includes(':') ? 'udp6' : 'udp4')
      udp.unref()
      udp.once('error', () => {
        udp.close()
        tcp.close(() => resolve(false))
      })
      udp.bind(port, host, () => {
        udp.close(() => tcp.close(() => resolve(true)))
      })
    })
  })
}

export interface TempDir {
  path: string
  remove(): void
}

/** A fresh folder under the system temp dir, removed at exit unless `keep`. */
export function tempDir(prefix = 'gatehouse-', options: { keep?: boolean } = {}): TempDir {
  const path = mkdtempSync(join(tmpdir(), prefix))
  const unregister = options.keep ? () => {} : onExit(() => removeQuietly(path))
  return {
    path,
    remove() {
      unregister()
      removeQuietly(path)
    },
  }
}

export class MissingBinaryError extends Error {
  override readonly name = 'MissingBinaryError'
}

/**
 * The path of a required binary; throws naming the Debian package when it is missing, so
 * a suite fails with what to install instead of skipping.
 */
export function requireBinary(candidates: string | string[], debianPackage: string): string {
  const list = Array.isArray(candidates) ? candidates : [candidates]
  for (const path of list) {
    try {
      accessSync(path, constants.X_OK)
      return path
    } catch {
      // try the next candidate
    }
  }
  throw new MissingBinaryError(
    `${list[0]} not found: install the Debian package ${debianPackage} (apt-get install -y ${debianPackage}; npm test installs it when run as root)`,
  )
}

export const isRoot = process.getuid?.() === 0

/** uid/gid of a system user, or undefined when it does not exist. */
export function userIds(name: string): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim())
    return { uid, gid }
  } catch {
    return undefined
  }
}
