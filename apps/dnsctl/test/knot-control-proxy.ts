/**
 * A proxy in front of knotd's control socket that refuses zone commits on demand: the process
 * boundary dnsctl's zone transactions cross (knotc's own commands pass through unchanged).
 * `fail` answers a zone-commit with an error (the client then aborts the transaction itself);
 * `skip` answers it OK without committing, and aborts the transaction upstream when the
 * client leaves, so knotd never serves the change.
 */
import { rmSync } from 'node:fs'
import { connect, createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { type ControlUnit, encodeCommand } from '../src/knot/control.ts'

const ITEMS = ['cmd', 'flags', 'error', 'section', 'item', 'id', 'zone', 'owner', 'ttl', 'type', 'data', 'filter']

/** Split a client stream into commands (data unit + block) and the end unit, with their bytes. */
function commands(buffer: Buffer): { parts: { raw: Buffer; unit: ControlUnit | 'end' }[]; rest: Buffer } {
  const parts: { raw: Buffer; unit: ControlUnit | 'end' }[] = []
  let start = 0
  let at = 0
  let unit: ControlUnit = {}
  while (at < buffer.length) {
    const code = buffer[at]!
    if (code === 0) {
      parts.push({ raw: buffer.subarray(start, at + 1), unit: 'end' })
      start = ++at
    } else if (code === 1 || code === 2) {
      unit = {}
      at++
    } else if (code === 3) {
      parts.push({ raw: buffer.subarray(start, at + 1), unit })
      start = ++at
    } else {
      if (at + 3 > buffer.length) break
      const length = buffer.readUInt16BE(at + 1)
      if (at + 3 + length > buffer.length) break
      ;(unit as Record<string, string>)[ITEMS[code - 16]!] = buffer.toString('utf8', at + 3, at + 3 + length)
      at += 3 + length
    }
  }
  return { parts, rest: buffer.subarray(start) }
}

export interface ControlProxy {
  path: string
  mode: 'pass' | 'fail' | 'skip'
  close(): Promise<void>
}

export async function startControlProxy(upstreamPath: string, dir: string): Promise<ControlProxy> {
  const path = join(dir, 'knot-proxy.sock')
  rmSync(path, { force: true })
  const proxy: ControlProxy = { path, mode: 'pass', close: async () => {} }
  const server: Server = createServer((client) => {
    const upstream = connect(upstreamPath)
    upstream.on('data', (d) => client.write(d))
    upstream.on('error', () => client.destroy())
    upstream.on('close', () => client.end())
    client.on('error', () => upstream.destroy())
    let pending: Buffer = Buffer.alloc(0)
    let abortAtEnd: string | undefined
    client.on('data', (chunk: Buffer) => {
      const { parts, rest } = commands(Buffer.concat([pending, chunk]))
      pending = Buffer.from(rest)
      for (const { raw, unit } of parts) {
        if (unit === 'end') {
          if (abortAtEnd !== undefined) upstream.write(encodeCommand({ cmd: 'zone-abort', zone: abortAtEnd }))
          upstream.write(raw)
        } else if (unit.cmd === 'zone-commit' && proxy.mode === 'fail') {
          client.write(encodeCommand({ error: 'simulated reload failure' }))
        } else if (unit.cmd === 'zone-commit' && proxy.mode === 'skip') {
          abortAtEnd = unit.zone
          client.write(Buffer.from([3]))
        } else upstream.write(raw)
      }
    })
    client.on('end', () => upstream.end())
  })
  await new Promise<void>((resolve) => server.listen(path, resolve))
  proxy.close = () => new Promise<void>((resolve) => server.close(() => resolve()))
  return proxy
}
