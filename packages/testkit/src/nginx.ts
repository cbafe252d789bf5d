/**
 * A real nginx (Debian's `nginx` package) serving HTTPS on a free loopback port from a
 * temporary prefix: one static site, the combined access log (what websignal reads), and
 * optionally `proxy_protocol` on the listener so it logs the address a gate forwards.
 * Runs in the foreground without a master process, so it needs no user switch.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { startChild } from './child.ts'
import { freePort, requireBinary, tempDir } from './env.ts'

export interface NginxOptions {
  /** Certificate and key (PEM) for the HTTPS listener. */
  cert: Buffer | string
  key: Buffer | string
  /** Expect a PROXY protocol header and log its address as the client. */
  proxyProtocol?: boolean
  /** Files served under `/` (name -> content); `index.html` by default. */
  files?: Record<string, Buffer | string>
}

export interface Nginx {
  port: number
  /** The combined-format access log. */
  accessLog: string
  dir: string
  stop(): Promise<void>
}

/** @example const nginx = await startNginx({ cert: server.cert, key: server.key }) */
export async function startNginx(options: NginxOptions): Promise<Nginx> {
  const bin = requireBinary('/usr/sbin/nginx', 'nginx')
  const tmp = tempDir('gatehouse-nginx-')
  const dir = tmp.path
  const port = await freePort()
  const www = join(dir, 'www')
  mkdirSync(www)
  mkdirSync(join(dir, 'logs'))
  for (const [name, content] of Object.entries(options.files ?? { 'index.html': '<h1>gatehouse test site</h1>\n' })) {
    writeFileSync(join(www, name), content)
  }
  writeFileSync(join(dir, 'server.crt'), options.cert)
  writeFileSync(join(dir, 'server.key'), options.key)
  const accessLog = join(dir, 'logs', 'access.log')
  // With proxy_protocol the client address nginx logs is the one the gate reports.
  const remote = options.proxyProtocol ? '$proxy_protocol_addr' : '$remote_addr'
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/tmp-body;
  proxy_temp_path ${dir}/tmp-proxy;
  fastcgi_temp_path ${dir}/tmp-fastcgi;
  uwsgi_temp_path ${dir}/tmp-uwsgi;
  scgi_temp_path ${dir}/tmp-scgi;
  log_format gatehouse '${remote} - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"';
  server {
    listen 127.0.0.1:${port} ssl${options.proxyProtocol ? ' proxy_protocol' : ''};
    server_name _;
    ssl_certificate ${dir}/server.crt;
    ssl_certificate_key ${dir}/server.key;
    ssl_session_tickets off;
    keepalive_requests 100000;
    access_log ${accessLog} gatehouse;
    root ${www};
  }
}
`,
  )
  const child = await startChild({
    name: 'nginx',
    command: bin,
    args: ['-p', dir, '-e', join(dir, 'logs', 'error.log'), '-c', join(dir, 'nginx.conf')],
    logFile: join(dir, 'stdout.log'),
    probe: () =>
      new Promise((resolve) => {
        const s = connect({ host: '127.0.0.1', port }, () => {
          s.destroy()
          resolve(true)
        })
        s.on('error', () => resolve(false))
      }),
  })
  return {
    port,
    accessLog,
    dir,
    async stop() {
      await child.stop()
      tmp.remove()
    },
  }
}
