/**
 * `npm start`: the TLS gate on embedded defaults in front of a demo nginx: the gate listens on
 * 127.0.0.1:8444 with PROXY protocol v2 to nginx on 127.0.0.1:8445 (a self-signed certificate
 * for `localhost`, made once with openssl under the data folder), metrics on 127.0.0.1:9123.
 * When the stack started edgegate first, the gate syncs with it every 5 s as node `tlsgate-1`
 * (registered by edgegate's stack; bearer token from its credentials.json, its local CA): it
 * uploads its fingerprints with their IP/port sightings and SNI, the TLS half of edgegate's web
 * evidence, and pulls the decisions made there for it. Without edgegate: local verdicts only.
 * A taken port stops this app with one line saying so. nginx writes its access log, with the
 * client addresses the gate passed on, to nginx/logs/access.log under the data folder: when the
 * stack runs websignal too, websignal's stack tails that file and sends demo visitors and a
 * scanner through this gate (apps/websignal/stack.ts).
 */
import { execFileSync, spawn } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { dirname, join } from 'node:path'
import type { StackContext, StackService, StartStack } from '../../packages/kit/src/stack.ts'
import { stackControlPlane } from '../../packages/kit/src/stack-control-plane.ts'
import { ensurePortFree, StackError, supervise } from '../../packages/kit/src/stack-ready.ts'

const HOST = '127.0.0.1'
const LISTEN_PORT = 8444
const NGINX_PORT = 8445
const METRICS_PORT = 9123
const READY_MS = 20_000

/** The demo site (under nginx/www/). */
const DEMO_PAGES: Record<string, string> = {
  'index.html': '<h1>Behind the Gatehouse TLS gate</h1>\n',
  'about/index.html': '<h1>About</h1>\n',
  'blog/hello/index.html': '<h1>Hello</h1>\n',
  'static/app.css': 'body { font-family: sans-serif; }\n',
  'img/logo.svg':
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><rect width="16" height="16"/></svg>\n',
}

/** A child process whose output goes to `logPath`, ready when `ready` appears in it. */
async function startLogged(
  name: string,
  command: string,
  args: string[],
  logPath: string,
  ready: (seen: string) => boolean | Promise<boolean>,
  say: (line: string) => void,
  env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '' },
) {
  const log = createWriteStream(logPath, { flags: 'a' })
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const running = supervise(child, { what: name, log: say, logFile: logPath })
  const stop = async () => {
    await running.stop()
    log.end()
  }
  try {
    await new Promise<void>((resolve, reject) => {
      let seen = ''
      const timer = setTimeout(
        () => reject(new StackError(`${name}: not ready within ${READY_MS / 1000} s; see ${logPath}`)),
        READY_MS,
      )
      let done = false
      const check = async () => {
        if (!done && (await ready(seen))) {
          done = true
          clearTimeout(timer)
          clearInterval(poll)
          resolve()
        }
      }
      const onData = (chunk: Buffer) => {
        log.write(chunk)
        seen = (seen + chunk.toString()).slice(-16_384)
        void check()
      }
      // Also polled: a server that prints nothing when ready (nginx) is probed by `ready`.
      const poll = setInterval(() => void check(), 200)
      child.stdout.on('data', onData)
      child.stderr.on('data', onData)
      void exited.then((code) => {
        clearTimeout(timer)
        clearInterval(poll)
        reject(new StackError(`${name}: exited during startup (code ${code}); see ${logPath}`))
      })
    })
  } catch (err) {
    await stop()
    throw err
  }
  running.ready()
  return stop
}

/** nginx with PROXY protocol on the listener, started in the foreground under `dir`. */
async function startDemoNginx(dir: string, port: number, say: (line: string) => void): Promise<() => Promise<void>> {
  const nginx = '/usr/sbin/nginx'
  if (!existsSync(nginx)) throw new StackError('tlsgate: /usr/sbin/nginx is missing (apt-get install nginx)')
  mkdirSync(join(dir, 'logs'), { recursive: true })
  mkdirSync(join(dir, 'www'), { recursive: true })
  const cert = join(dir, 'localhost.crt')
  const key = join(dir, 'localhost.key')
  if (!existsSync(cert) || !existsSync(key)) {
    execFileSync(
      '/usr/bin/openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '365',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    )
  }
  // The pages websignal's demo visitors ask for (apps/websignal/stack-traffic.ts): visitors are
  // answered 200, so only the scanner's probes are errors in the access log.
  for (const [path, body] of Object.entries(DEMO_PAGES)) {
    mkdirSync(dirname(join(dir, 'www', path)), { recursive: true })
    writeFileSync(join(dir, 'www', path), body)
  }
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 1024; }
http {
  client_body_temp_path ${dir}/tmp-body;
  proxy_temp_path ${dir}/tmp-proxy;
  fastcgi_temp_path ${dir}/tmp-fastcgi;
  uwsgi_temp_path ${dir}/tmp-uwsgi;
  scgi_temp_path ${dir}/tmp-scgi;
  log_format gatehouse '$proxy_protocol_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"';
  server {
    listen ${HOST}:${port} ssl proxy_protocol;
    ssl_certificate ${cert};
    ssl_certificate_key ${key};
    access_log ${dir}/logs/access.log gatehouse;
    root ${dir}/www;
  }
}
`,
  )
  const listening = () =>
    new Promise<boolean>((resolve) => {
      const s = connect({ host: HOST, port }, () => {
        s.destroy()
        resolve(true)
      })
      s.on('error', () => resolve(false))
    })
  const args = ['-p', dir, '-e', join(dir, 'logs', 'error.log'), '-c', join(dir, 'nginx.conf')]
  return startLogged('nginx', nginx, args, join(dir, 'logs', 'stdout.log'), listening, say)
}

export const startStack: StartStack = async (ctx: StackContext): Promise<StackService> => {
  const [listenPort, nginxPort, metricsPort] = [ctx.port(LISTEN_PORT), ctx.port(NGINX_PORT), ctx.port(METRICS_PORT)]
  await ensurePortFree('tlsgate', HOST, listenPort, 'TLS gate')
  await ensurePortFree('tlsgate', HOST, nginxPort, 'demo nginx')
  await ensurePortFree('tlsgate', HOST, metricsPort, 'metrics')
  const stopNginx = await startDemoNginx(join(ctx.dataDir, 'nginx'), nginxPort, ctx.log)
  const db = join(ctx.dataDir, 'tlsgate.db')
  const configPath = join(ctx.dataDir, 'config.json')
  // bin/tlsgate reads this file by default: with the database and the metrics address in it,
  // list, block and status reach this gate without flags. Other keys an operator added stay;
  // control_plane is the stack's: written while edgegate runs in it, removed when it does not
  // (its token comes from the stack, so a section left behind would stop the gate at start).
  const cp = stackControlPlane(ctx, { id: 'tlsgateId', token: 'tlsgateToken' })
  const { control_plane: _managed, ...kept } = existsSync(configPath)
    ? (JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>)
    : {}
  const fileConfig = {
    ...kept,
    db,
    metrics_listen: `${HOST}:${metricsPort}`,
    ...(cp ? { control_plane: cp.config } : {}),
  }
  writeFileSync(configPath, `${JSON.stringify(fileConfig, null, 2)}\n`)
  const logPath = join(ctx.dataDir, 'tlsgate.log')
  let stopGate: () => Promise<void>
  try {
    stopGate = await startLogged(
      'tlsgate',
      ctx.node,
      [
        join(import.meta.dirname, 'src', 'main.ts'),
        'serve',
        '--route',
        `${HOST}:${listenPort}=${HOST}:${nginxPort}`,
        '--proxy-protocol',
        '--db',
        db,
        '--config',
        configPath,
        '--metrics-listen',
        `${HOST}:${metricsPort}`,
      ],
      logPath,
      (seen) => seen.includes('"msg":"tlsgate ready"'),
      ctx.log,
      { PATH: process.env.PATH ?? '', ...(cp ? { TLSGATE_CONTROL_PLANE_TOKEN: cp.token } : {}) },
    )
  } catch (err) {
    await stopNginx()
    throw err
  }
  ctx.log(
    `TLS gate ${HOST}:${listenPort} -> demo nginx ${HOST}:${nginxPort} (log: ${logPath})${
      cp ? `, syncing with ${cp.url} as ${cp.instance} every 5 s` : ', local verdicts only (edgegate is not running)'
    }`,
  )
  return {
    urls: { 'tls gate': `https://localhost:${listenPort}/`, metrics: `http://${HOST}:${metricsPort}/metrics` },
    notes: [
      // websignal's stack, when it runs, sends demo traffic through the gate from other loopback addresses.
      'visit the site through the gate (self-signed certificate), then see the client fingerprints (curl is the one from 127.0.0.1):',
      `$ curl -k https://localhost:${listenPort}/`,
      '$ bin/tlsgate list',
      'block curl and try again (refused with a TLS alert before nginx sees it):',
      '$ bin/tlsgate block <fingerprint>',
      ...(cp
        ? [
            `or block it on the control plane, for this gate only (the gate syncs with ${cp.url} as ${cp.instance} every 5 s):`,
            `$ bin/edgegate decision block --instance ${cp.instance} <fingerprint>`,
            'what edgegate has from this gate, client IPs (SNI with --json): the TLS half of its web evidence (Web candidates):',
            `$ bin/edgegate fingerprint list --instance ${cp.instance}`,
          ]
        : ['edgegate is not running: local verdicts only, no control-plane sync']),
      'what the gate did, and its last sync (asks the running gate through its metrics endpoint):',
      '$ bin/tlsgate status',
    ],
    async stop() {
      await stopGate()
      await stopNginx()
    },
  }
}
