/**
 * Captures real ClientHellos: a loopback TCP listener that reads until the hello is complete,
 * then closes, while a real client (`openssl s_client`, `curl`, Chromium) connects to it.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer, type Socket } from 'node:net'
import { requireBinary } from '@gatehouse/testkit'
import { readClientHello } from '../src/wire/client-hello.ts'

/** Listen, run `connect(port)`, and resolve with the first client's complete hello bytes. */
export async function captureHello(connect: (port: number) => { stop(): void }): Promise<Buffer> {
  let resolveBytes!: (b: Buffer) => void
  let rejectBytes!: (e: Error) => void
  const bytes = new Promise<Buffer>((res, rej) => {
    resolveBytes = res
    rejectBytes = rej
  })
  const server = createServer((socket: Socket) => {
    let buf = Buffer.alloc(0)
    socket.on('error', () => {})
    socket.on('data', (d) => {
      buf = Buffer.concat([buf, d])
      const state = readClientHello(buf)
      if (state.kind === 'more') return
      socket.destroy()
      if (state.kind === 'done') resolveBytes(buf.subarray(0, state.consumed))
      else rejectBytes(state.error)
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = (server.address() as { port: number }).port
  const client = connect(port)
  const timer = setTimeout(() => rejectBytes(new Error('no ClientHello within 20 s')), 20_000)
  try {
    return await bytes
  } finally {
    clearTimeout(timer)
    client.stop()
    server.close()
  }
}

function run(bin: string, args: string[]): { stop(): void } {
  const child = spawn(bin, args, { stdio: ['pipe', 'ignore', 'ignore'] })
  child.on('error', () => {})
  return { stop: () => child.kill('SIGKILL') }
}

export const opensslHello = () =>
  captureHello((port) =>
    run(requireBinary('/usr/bin/openssl', 'openssl'), [
      's_client',
      '-connect',
      `127.0.0.1:${port}`,
      '-servername',
      'gate.example.test',
      '-alpn',
      'h2,http/1.1',
    ]),
  )

export const curlHello = () =>
  captureHello((port) =>
    run(requireBinary('/usr/bin/curl', 'curl'), [
      '-sk',
      '--max-time',
      '15',
      '--resolve',
      `www.example.test:${port}:127.0.0.1`,
      `https://www.example.test:${port}/`,
    ]),
  )

/** Chromium (through testkit's launcher) opening https://chromium.example.test:<port>/. */
export async function chromiumHello(): Promise<Buffer> {
  const { launchChromium } = await import('@gatehouse/testkit')
  const browser = await launchChromium()
  try {
    const page = await browser.newPage({ ignoreHTTPSErrors: true })
    return await captureHello((port) => {
      // The hello is all we need; the navigation fails when the listener closes.
      page.goto(`https://localhost:${port}/`, { timeout: 15_000 }).catch(() => {})
      return { stop: () => {} }
    })
  } finally {
    await browser.close()
  }
}
