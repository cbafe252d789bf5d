/**
 * A real Redis server on a free loopback port, keeping nothing on disk.
 */
import { join } from 'node:path'
import { startChild } from './child.ts'
import { freePort, requireBinary, tempDir } from './env.ts'

export interface Redis {
  port: number
  url: string
  stop(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/** @example const redis = await startRedis(); after(() => redis.stop()); new IORedis(redis.url) */
export async function startRedis(): Promise<Redis> {
  const bin = requireBinary('/usr/bin/redis-server', 'redis-server')
  const dir = tempDir('gatehouse-redis-')
  const port = await freePort()
  const child = await startChild({
    name: 'redis-server',
    command: bin,
    args: [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir.path,
      '--daemonize',
      'no',
    ],
    logFile: join(dir.path, 'redis.log'),
    readyLine: /Ready to accept connections/,
  })
  const stop = async () => {
    await child.stop()
    dir.remove()
  }
  return { port, url: `redis://127.0.0.1:${port}`, stop, [Symbol.asyncDispose]: stop }
}
