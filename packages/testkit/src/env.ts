/**
 * Ports, temporary folders and required binaries for test servers.
 */
import { execFileSync } from 'node:child_process'
import { createSocket } from 'node:dgram'
import { accessSync, constants, mkdtempSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { onExit, removeQuietly } from './cleanup.ts'

/**
 * A port free on `host` right now, for TCP and UDP alike (DNS servers bind both).
 *
 * Ports come from below the kernel's ephemeral range: a port the OS picked with bind(0) can be
 * taken again as the source port of any outgoing connection before the child under test binds
 * it, which made parallel suites fail with EADDRINUSE. Each process walks the range from a random
 * start and never hands out the same port twice, so parallel test files rarely even probe the
 * same port.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const [low, high] = portRange()
  for (let tries = 0; tries < 200; tries++) {
    const port = low + (nextOffset++ % (high - low))
    if (handedOut.has(port)) continue
    if (!(await canBind(port, host))) continue
    handedOut.add(port)
    return port
  }
  throw new Error(`no free port found on ${host} between ${low} and ${high}`)
}

const handedOut = new Set<number>()
let nextOffset = Math.floor(Math.random() * 1_000_000)

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
