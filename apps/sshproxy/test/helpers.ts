/**
 * Test helpers: the real `sshproxy` binary as a child process, raw TCP clients, and the
 * first bytes real SSH clients send (captured from the real clients, never hand-written).
 */
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { join } from 'node:path'
import {
  type Child,
  dropbearClient,
  freePort,
  generateClientKey,
  sshClient,
  startChild,
  tempDir,
} from '@gatehouse/testkit'
import { run } from '../src/cli/program.ts'
import { openStore } from '../src/db/index.ts'
import { type FingerprintEntry, listEntries } from '../src/fingerprints/store.ts'
import { KEXINIT_NAME_LISTS } from '../src/wire/constants.ts'
import { readClientHandshake } from '../src/wire/handshake.ts'
import type { KexInit } from '../src/wire/kexinit.ts'

export const MAIN = join(import.meta.dirname, '..', 'src', 'main.ts')
export const NODE = process.execPath

export const OPENSSH_FP = '2edbc78717d7f7d5c4c7e3a0bca94ef7'
export const DROPBEAR_FP = '2ad8687458b64a8806f723559d839151'

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

/** Run `sshproxy ARGS` as a child process. */
export function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(NODE, [MAIN, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0
      resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr })
    })
  })
}

/** Run the CLI in this process (same entry as the binary) for the many cases that only need its output. */
export async function cliInProcess(args: string[]): Promise<CliResult> {
  let stdout = ''
  let stderr = ''
  const code = await run(args, {
    out: (t) => {
      stdout += t
    },
    err: (t) => {
      stderr += t
    },
  })
  return { code, stdout, stderr }
}

/** The stored entries, read straight from the gate's SQLite file (a second connection, as the CLI uses). */
export async function readEntries(dbPath: string): Promise<FingerprintEntry[]> {
  const store = await openStore(dbPath)
  try {
    return await listEntries(store.db)
  } finally {
    await store.close()
  }
}

export { waitFor } from '@gatehouse/testkit'

export interface Gate {
  port: number
  metricsPort: number
  dbPath: string
  child: Child
  log(): string
  metrics(): Promise<string>
  stop(): Promise<void>
}

/**
 * Start `sshproxy serve` in front of `backendPort` with a fresh database; `openFiles` runs it
 * under that limit on open files (util-linux's prlimit).
 */
export async function startGate(
  backendPort: number,
  extra: string[] = [],
  dbPath?: string,
  config: Record<string, unknown> = {},
  { openFiles }: { openFiles?: number } = {},
): Promise<Gate> {
  const dir = tempDir('sshproxy-gate-')
  const port = await freePort()
  const metricsPort = await freePort()
  const db = dbPath ?? join(dir.path, 'sshproxy.db')
  const configPath = join(dir.path, 'config.json')
  writeFileSync(configPath, `${JSON.stringify(config)}\n`)
  const child = await startChild({
    name: 'sshproxy',
    command: openFiles === undefined ? NODE : 'prlimit',
    args: [
      ...(openFiles === undefined ? [] : [`--nofile=${openFiles}`, NODE]),
      MAIN,
      'serve',
      '--route',
      `127.0.0.1:${port}=127.0.0.1:${backendPort}`,
      '--db',
      db,
      '--config',
      configPath,
      '--metrics-listen',
      `127.0.0.1:${metricsPort}`,
      ...extra,
    ],
    logFile: join(dir.path, 'sshproxy.log'),
    readyLine: /sshproxy ready/,
  })
  return {
    port,
    metricsPort,
    dbPath: db,
    child,
    log: () => child.log(),
    metrics: async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(),
    stop: async () => {
      await child.stop()
      dir.remove()
    },
  }
}

/** The value of one metric series from Prometheus text (testkit's reader). */
export { metric } from '@gatehouse/testkit'

export interface FakeBackend {
  port: number
  server: Server
  /** TCP connections accepted so far (the gate's startup probe included). */
  connections(): number
  /** Bytes received on each connection, in order. */
  received(): Buffer[]
  close(): Promise<void>
}

/**
 * A fake SSH server that sends an identification line and then echoes what it receives
 * (for tests that look at the relay without a key exchange).
 */
export async function fakeBackend(identification = 'SSH-2.0-OpenSSH_9.9 gatehouse-fake'): Promise<FakeBackend> {
  const sockets = new Set<Socket>()
  const received: Buffer[] = []
  let connections = 0
  const server = createServer((s) => {
    connections++
    const index = received.push(Buffer.alloc(0)) - 1
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
    s.on('error', () => {})
    s.on('data', (d: Buffer) => {
      received[index] = Buffer.concat([received[index]!, d])
      s.write(d)
    })
    s.write(`${identification}\r\n`)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as { port: number }).port
  return {
    port,
    server,
    connections: () => connections,
    received: () => received,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy()
        server.close(() => r())
      }),
  }
}

/**
 * The exact bytes a real client sends after receiving an identification: its identification
 * line, its KEXINIT, and (Dropbear) the guessed key-exchange packet.
 */
export async function captureClientHello(which: 'openssh' | 'dropbear'): Promise<Buffer> {
  const chunks: Buffer[] = []
  let done!: () => void
  const enough = new Promise<void>((r) => {
    done = r
  })
  const server = createServer((s) => {
    s.on('error', () => {})
    s.write('SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u7\r\n')
    s.on('data', (d: Buffer) => {
      chunks.push(d)
      const buf = Buffer.concat(chunks)
      const lf = buf.indexOf(0x0a)
      if (lf === -1 || buf.length < lf + 5) return
      const need = lf + 1 + 4 + buf.readUInt32BE(lf + 1)
      // Dropbear's guessed key-exchange packet follows its KEXINIT: wait for it too.
      if (buf.length > need || (which === 'openssh' && buf.length === need)) {
        s.destroy()
        done()
      }
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as { port: number }).port
  const dir = tempDir('sshproxy-capture-')
  const key = generateClientKey(dir.path)
  const client =
    which === 'openssh' ? sshClient({ port, key, timeoutMs: 15_000 }) : dropbearClient({ port, key, timeoutMs: 15_000 })
  await enough
  await client
  server.close()
  dir.remove()
  return Buffer.concat(chunks)
}

/** A raw client: reads the gate's identification, optionally sends bytes, and reports how the connection ended. */
export function rawClient(
  port: number,
  send?: Buffer | ((socket: Socket) => void),
): Promise<{ identification: string; ended: 'end' | 'reset' | 'closed'; received: Buffer }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let received = Buffer.alloc(0)
    let ended: 'end' | 'reset' | 'closed' = 'closed'
    let sent = false
    socket.on('data', (d: Buffer) => {
      received = Buffer.concat([received, d])
      if (!sent && received.includes(0x0a)) {
        sent = true
        if (typeof send === 'function') send(socket)
        else if (send) socket.write(send)
      }
    })
    socket.on('end', () => {
      ended = 'end'
      socket.end()
    })
    socket.on('error', (err: NodeJS.ErrnoException) => {
      ended = err.code === 'ECONNRESET' ? 'reset' : 'closed'
    })
    socket.on('close', () => {
      const lf = received.indexOf(0x0a)
      resolve({ identification: lf === -1 ? '' : received.subarray(0, lf).toString('latin1').trim(), ended, received })
    })
  })
}

function encodeNameList(s: string): Buffer {
  const len = Buffer.alloc(4)
  len.writeUInt32BE(s.length)
  return Buffer.concat([len, Buffer.from(s, 'latin1')])
}

/** Build a valid unencrypted packet around a KEXINIT payload (RFC 4253 §6 padding rules). */
export function kexInitPacket(kex: KexInit, padding = 4): Buffer {
  const payload = Buffer.concat([
    Buffer.from([20]),
    Buffer.alloc(16, 7),
    ...KEXINIT_NAME_LISTS.map((n) => encodeNameList(kex[n])),
    Buffer.from([kex.first_kex_packet_follows ? 1 : 0, 0, 0, 0, 0]),
  ])
  let pad = padding
  while ((4 + 1 + payload.length + pad) % 8 !== 0) pad++
  const head = Buffer.alloc(5)
  head.writeUInt32BE(1 + payload.length + pad)
  head[4] = pad
  return Buffer.concat([head, payload, Buffer.alloc(pad)])
}

/**
 * A captured client hello with one more key-exchange method offered: the same client as far as
 * the gate can tell, but a fingerprint of its own for each `variant`.
 */
export function helloVariant(hello: Buffer, variant: string): Buffer {
  const state = readClientHandshake(hello)
  if (state.kind !== 'done') throw new Error(`not a client hello: ${state.kind}`)
  const kex = { ...state.kexinit, kex_algorithms: `${state.kexinit.kex_algorithms},${variant}@gatehouse.test` }
  return Buffer.concat([hello.subarray(0, hello.indexOf(0x0a) + 1), kexInitPacket(kex)])
}
