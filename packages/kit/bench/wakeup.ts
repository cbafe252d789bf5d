/**
 * What a loopback round trip between two processes costs this machine in CPU time, when both
 * stay busy and when each waits idle between messages: the host's price for putting a process
 * to sleep and waking it. A request/response service and its database pay it on every round
 * trip that finds the other side asleep, so on a machine where it is high, CPU per operation
 * rises as concurrency falls (fewer requests per wake-up). The message size is varied too, to
 * tell the copy apart from the wake-up.
 *
 * An echo server runs in a child process; this process sends a message and waits for the
 * 20-byte answer, `WAKEUP_BENCH_ROUND_TRIPS` times (default 4,000), back to back or with a timer gap
 * between round trips.
 * Figures: CPU time (user + system) per round trip of the sender (this process) and of the
 * echo server (from /proc), and the wall time per round trip.
 *
 *   npm run bench:wakeup -w packages/kit
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import net from 'node:net'
import { cpus, loadavg } from 'node:os'
import { freePort, processCpu } from '@gatehouse/testkit'

const ROUND_TRIPS = Number(process.env.WAKEUP_BENCH_ROUND_TRIPS ?? 4000)

const ECHO = `
const net = require('node:net')
net.createServer((s) => {
  s.setNoDelay(true)
  let pending = 0, want = -1
  s.on('data', (d) => {
    // Messages are length-prefixed (4 bytes); answer each one whole with 20 bytes.
    let off = 0
    while (off < d.length) {
      if (want < 0) { want = d.readUInt32BE(off); pending = 0 }
      const take = Math.min(want - pending, d.length - off)
      pending += take; off += take
      if (pending === want) { s.write(Buffer.alloc(20)); want = -1 }
    }
  })
}).listen(Number(process.argv[1]), '127.0.0.1', () => process.send('ready'))
`

async function startEcho(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', ECHO, String(port)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  await once(child, 'message')
  return child
}

const cpuSeconds = (pid: number) => {
  const c = processCpu(pid)
  return c.user + c.system
}
const ownCpuSeconds = () => {
  const c = process.cpuUsage()
  return (c.user + c.system) / 1e6
}

async function roundTrips(port: number, echoPid: number, size: number, gapMs: number) {
  const socket = net.connect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.setNoDelay(true)
  const message = Buffer.alloc(size, 97)
  message.writeUInt32BE(size, 0)
  const answer = () =>
    new Promise<void>((resolve) => {
      let got = 0
      const onData = (d: Buffer) => {
        got += d.length
        if (got >= 20) {
          socket.off('data', onData)
          resolve()
        }
      }
      socket.on('data', onData)
    })
  const gap = () => new Promise((r) => setTimeout(r, gapMs))
  for (let i = 0; i < 200; i++) {
    const a = answer()
    socket.write(message)
    await a
  }
  const own0 = ownCpuSeconds()
  const echo0 = cpuSeconds(echoPid)
  const t0 = performance.now()
  for (let i = 0; i < ROUND_TRIPS; i++) {
    const a = answer()
    socket.write(message)
    await a
    if (gapMs > 0) await gap()
  }
  const wallUs = ((performance.now() - t0) * 1000) / ROUND_TRIPS
  const us = (s: number) => ((s / ROUND_TRIPS) * 1e6).toFixed(0).padStart(4)
  socket.destroy()
  return {
    sender: us(ownCpuSeconds() - own0),
    echo: us(cpuSeconds(echoPid) - echo0),
    wall: wallUs.toFixed(0),
  }
}

console.log(`machine: ${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}, node ${process.version}`)
console.log(
  `load average at start: ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
)
console.log(`loopback TCP round trips between two processes, ${ROUND_TRIPS} each; CPU time per round trip`)
const port = await freePort()
const echo = await startEcho(port)
try {
  for (const gapMs of [0, 1])
    for (const size of [100, 40_000]) {
      const r = await roundTrips(port, echo.pid!, size, gapMs)
      const shape = (gapMs === 0 ? 'back to back' : `idle ${gapMs} ms between them`).padEnd(22)
      console.log(
        `${shape}  ${String(size).padStart(6)} B: sender ${r.sender} µs  echo ${r.echo} µs  wall ${r.wall} µs per round trip`,
      )
    }
} finally {
  echo.kill()
}
