/**
 * `npm start`: the SSH gate on embedded defaults in front of a private demo sshd
 * (stack-sshd.ts): the gate listens on 127.0.0.1:2222, sshd on 127.0.0.1:2200, metrics on
 * 127.0.0.1:9122 (a port already taken stops this app with one line saying so). When the stack
 * started edgegate first, the gate syncs with it every 5 s as node `sshgate-1` (bearer token
 * from edgegate's credentials.json, written to control-plane.token, which config.json names; its
 * local CA). config.json and the token file are regenerated on every start.
 */
import { spawn } from 'node:child_process'
import { chmodSync, createWriteStream, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { StackContext, StackService, StartStack } from '../../packages/kit/src/stack.ts'
import { stackControlPlane } from '../../packages/kit/src/stack-control-plane.ts'
import { ensurePortFree, StackError, shownPath, supervise } from '../../packages/kit/src/stack-ready.ts'
import { startDemoSshd } from './stack-sshd.ts'

const HOST = '127.0.0.1'
const LISTEN_PORT = 2222
const SSHD_PORT = 2200
const METRICS_PORT = 9122
const READY_MS = 20_000

export const startStack: StartStack = async (ctx: StackContext): Promise<StackService> => {
  const [listenPort, sshdPort, metricsPort] = [ctx.port(LISTEN_PORT), ctx.port(SSHD_PORT), ctx.port(METRICS_PORT)]
  await ensurePortFree('sshproxy', HOST, listenPort, 'SSH gate')
  await ensurePortFree('sshproxy', HOST, metricsPort, 'metrics')
  const db = join(ctx.dataDir, 'sshproxy.db')
  const configPath = join(ctx.dataDir, 'config.json')
  const cp = stackControlPlane(ctx, { id: 'nodeId', token: 'nodeToken' })
  // The database and the metrics address are in the config file too, so bin/sshproxy list and
  // status (which read this file by default) find the store and the running gate without flags.
  const metricsListen = `${HOST}:${metricsPort}`
  // The token in a file of its own (owner-only) that config.json names: bin/sshproxy doctor and
  // status find it as serve does, and a token rotated by hand can be written there and taken on
  // SIGHUP, as the README describes. Rewritten from edgegate's credentials.json on every start.
  const tokenFile = join(ctx.dataDir, 'control-plane.token')
  if (cp) {
    writeFileSync(tokenFile, `${cp.token}\n`, { mode: 0o600 })
    chmodSync(tokenFile, 0o600)
  }
  const fileConfig = {
    db,
    metrics_listen: metricsListen,
    ...(cp ? { control_plane: { ...cp.config, token_file: tokenFile } } : {}),
  }
  writeFileSync(configPath, `${JSON.stringify(fileConfig, null, 2)}\n`)
  const sshd = await startDemoSshd(join(ctx.dataDir, 'sshd'), sshdPort, listenPort)
  const main = join(import.meta.dirname, 'src', 'main.ts')
  const logPath = join(ctx.dataDir, 'sshproxy.log')
  const log = createWriteStream(logPath, { flags: 'a' })
  const child = spawn(
    ctx.node,
    [
      main,
      'serve',
      '--route',
      `${HOST}:${listenPort}=${HOST}:${sshdPort}`,
      '--config',
      configPath,
      '--metrics-listen',
      metricsListen,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '' },
    },
  )
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const running = supervise(child, { what: 'sshproxy', log: ctx.log, logFile: logPath })
  const stop = async () => {
    await running.stop()
    log.end()
    await sshd.stop()
  }
  try {
    await new Promise<void>((resolve, reject) => {
      let seen = ''
      const timer = setTimeout(
        () => reject(new StackError(`sshproxy: not ready within ${READY_MS / 1000} s; see ${logPath}`)),
        READY_MS,
      )
      const onData = (chunk: Buffer) => {
        log.write(chunk)
        seen = (seen + chunk.toString()).slice(-16_384)
        if (seen.includes('"msg":"sshproxy ready"')) {
          clearTimeout(timer)
          resolve()
        }
      }
      child.stdout.on('data', onData)
      child.stderr.on('data', onData)
      void exited.then((code) => {
        clearTimeout(timer)
        const last = seen.trim().split('\n').at(-1) ?? ''
        reject(new StackError(`sshproxy: exited during startup (code ${code}): ${last.slice(0, 300)}`))
      })
    })
  } catch (err) {
    await stop()
    throw err
  }
  running.ready()
  const show = (p: string) => shownPath(ctx.root, p)
  const ssh = `ssh -p ${listenPort} -i ${show(sshd.key)} -o IdentitiesOnly=yes -o UserKnownHostsFile=${show(sshd.knownHosts)} ${sshd.user}@${HOST}`
  ctx.log(`SSH gate ${HOST}:${listenPort} -> demo sshd ${HOST}:${sshdPort} (log: ${logPath})`)
  return {
    urls: { 'ssh gate': `${HOST}:${listenPort}`, metrics: `http://${HOST}:${metricsPort}/metrics` },
    notes: [
      'connect through the gate (a new client is stopped until approved):',
      `$ ${ssh}`,
      'see its fingerprint:',
      '$ bin/sshproxy list',
      cp
        ? `approve it on the edgegate dashboard or with bin/edgegate (the gate syncs with ${cp.url} as ${cp.instance} every 5 s):`
        : 'approve it locally (edgegate is not running: no control-plane sync):',
      cp
        ? `$ bin/edgegate decision approve --instance ${cp.instance} <fingerprint>`
        : '$ bin/sshproxy approve <fingerprint>',
      'then run the ssh command again: the demo sshd greets you; what the gate did, and its last sync:',
      '$ bin/sshproxy status',
      'its settings checked, as serve read them (the route is given by flag):',
      `$ bin/sshproxy doctor --route ${HOST}:${listenPort}=${HOST}:${sshdPort}`,
    ],
    stop,
  }
}
