/**
 * `npm start`: the SSH gate on embedded defaults. It listens on 127.0.0.1:2222 in front of the
 * local sshd (127.0.0.1:22) with its database under the stack's data folder, and serves
 * metrics on 127.0.0.1:9122; a port already taken falls back to a free one (printed). When
 * the stack started edgegate first, the gate syncs with it as node `sshgate-1` (bearer token
 * from edgegate's credentials.json, its local CA): config.json is regenerated on every start.
 */
import { spawn } from 'node:child_process'
import { createWriteStream, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import type { StackContext, StackService, StartStack } from '@gatehouse/kit'

const HOST = '127.0.0.1'
const LISTEN_PORT = 2222
const BACKEND = '127.0.0.1:22'
const METRICS_PORT = 9122

/** The port if nothing listens on it, else 0 (the gate then binds a free one). */
function portOrAny(port: number): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', () => resolve(0))
    probe.listen({ host: HOST, port, exclusive: true }, () => probe.close(() => resolve(port)))
  })
}

interface ControlPlane {
  config: Record<string, unknown>
  token: string
  url: string
  instance: string
}

/** edgegate's stack keeps its node credentials and CA under its own data folder. */
function controlPlane(ctx: StackContext): ControlPlane | undefined {
  const edgegate = ctx.started.edgegate
  if (!edgegate) return undefined
  const dir = join(ctx.root, '.gatehouse', 'edgegate')
  const file = join(dir, 'credentials.json')
  const ca = join(dir, 'tls', 'ca.crt')
  if (!existsSync(file) || !existsSync(ca)) {
    ctx.log(`edgegate is running but ${file} or ${ca} is missing: sync disabled`)
    return undefined
  }
  const c = JSON.parse(readFileSync(file, 'utf8')) as { nodeId?: string; nodeToken?: string }
  const url = edgegate.urls.api
  if (!c.nodeId || !c.nodeToken || !url) {
    ctx.log(`${file} has no nodeId/nodeToken (or edgegate printed no api URL): sync disabled`)
    return undefined
  }
  // The token goes through the environment, so config.json holds no secret.
  return { config: { url, instance_id: c.nodeId, ca }, token: c.nodeToken, url, instance: c.nodeId }
}

export const startStack: StartStack = async (ctx: StackContext): Promise<StackService> => {
  const db = join(ctx.dataDir, 'sshproxy.db')
  const configPath = join(ctx.dataDir, 'config.json')
  const cp = controlPlane(ctx)
  writeFileSync(configPath, `${JSON.stringify(cp ? { control_plane: cp.config } : {}, null, 2)}\n`)
  const [listenPort, metricsPort] = [await portOrAny(LISTEN_PORT), await portOrAny(METRICS_PORT)]
  const main = join(import.meta.dirname, 'src', 'main.ts')
  const logPath = join(ctx.dataDir, 'sshproxy.log')
  const log = createWriteStream(logPath, { flags: 'a' })
  const child = spawn(
    ctx.node,
    [
      main,
      'serve',
      '--route',
      `${HOST}:${listenPort}=${BACKEND}`,
      '--db',
      db,
      '--config',
      configPath,
      '--metrics-listen',
      `${HOST}:${metricsPort}`,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...(cp ? { SSHPROXY_CONTROL_PLANE_TOKEN: cp.token } : {}) },
    },
  )
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const ready = await new Promise<{ routes: { port: number }[]; metrics?: { port: number } }>((resolve, reject) => {
    let seen = ''
    const onData = (chunk: Buffer) => {
      log.write(chunk)
      seen = (seen + chunk.toString()).slice(-16_384)
      const line = seen.split('\n').find((l) => l.includes('"msg":"sshproxy ready"'))
      if (line) resolve(JSON.parse(line))
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    void exited.then((code) => reject(new Error(`sshproxy exited (code ${code}): ${seen.trim().split('\n').at(-1)}`)))
  })
  const port = ready.routes[0]?.port ?? listenPort
  const metrics = `http://${HOST}:${ready.metrics?.port ?? metricsPort}/metrics`
  if (listenPort !== LISTEN_PORT) ctx.log(`port ${LISTEN_PORT} is taken; the gate listens on ${port} instead`)
  if (metricsPort !== METRICS_PORT) ctx.log(`port ${METRICS_PORT} is taken; metrics are on ${metrics} instead`)
  ctx.log(`SSH gate ${HOST}:${port} -> sshd ${BACKEND} (log: ${logPath})`)
  return {
    urls: { 'ssh gate': `ssh -p ${port} ${HOST}`, metrics },
    notes: [
      cp
        ? `syncs with edgegate ${cp.url} as ${cp.instance} every 30 s: approve clients on the dashboard, or locally:`
        : 'new clients are stopped until approved (edgegate is not running: no control-plane sync):',
      `  node apps/sshproxy/src/main.ts list --db ${db}`,
      `  node apps/sshproxy/src/main.ts approve --db ${db} <fingerprint>`,
      `an sshd must listen on ${BACKEND} for approved clients to get through`,
    ],
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM')
      await exited
      log.end()
    },
  }
}
