/**
 * artsvc benchmarks (`npm run bench -w apps/artsvc`), each against a baseline measured in
 * the same run:
 *
 * 1. Upload + validate + commit of a 25 MiB, 500-file bundle, against `unzip -t` of the
 *    same file (which also inflates and CRC-checks every entry, but stores nothing).
 * 2. Content-origin requests/s for small files, against nginx serving the same extracted
 *    files on loopback (one nginx worker, as artsvc is one Node process).
 *
 * artsvc and nginx run as child processes; the load generator runs here. Loopback only;
 * stops by itself in about a minute and a half.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { get as httpGet, type IncomingHttpHeaders } from 'node:http'
import { cpus, loadavg, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import {
  buildHttpRequest,
  freePort,
  type HttpLoadResult,
  httpLoad,
  processCpu,
  startChild,
  startOidcProvider,
  tempDir,
} from '@gatehouse/testkit'
import { buildZip, type ZipEntryInput } from '../test/helpers/zip-builder.ts'

const RUNS = 5
/** Content origin: alternating rounds (artsvc, nginx, artsvc, …) so that load from
 * elsewhere on the machine hits both alike; the ratio is the median of the rounds. */
const ROUNDS = 16
const ROUND_SECONDS = 1.5
const CONNECTIONS = 32
const PAUSED_ROUNDS = 3
const PAUSED_SECONDS = 4
const PAUSE = { everyMs: 500, forMs: 1200 }
/** CPU time (ms: user, system) of a process and its children so far. */
function cpuMs(pid: number): { user: number; sys: number } {
  const c = processCpu(pid, { children: true })
  return { user: c.user * 1000, sys: c.system * 1000 }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const ms = (t0: number) => performance.now() - t0

const dir = tempDir('artsvc-bench-')
const op = await startOidcProvider({
  redirectUris: ['http://127.0.0.1:9/cb'],
  audience: 'https://artsvc.bench',
  scopes: ['artsvc:mcp'],
})
const port = await freePort()
const base = `http://127.0.0.1:${port}`
const child = await startChild({
  name: 'artsvc',
  command: process.execPath,
  // ARTSVC_BENCH_PROFILE=<dir>: write a CPU profile of the server (for finding hot spots).
  args: [
    ...(process.env.ARTSVC_BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.ARTSVC_BENCH_PROFILE] : []),
    new URL('../src/main.ts', import.meta.url).pathname,
  ],
  env: {
    PATH: process.env.PATH ?? '',
    ARTSVC_PUBLIC_URL: base,
    ARTSVC_CONTENT_URL: `http://localhost:${port}`,
    ARTSVC_LISTEN: `127.0.0.1:${port}`,
    ARTSVC_COOKIE_SECRET: randomBytes(32).toString('base64'),
    ARTSVC_STORAGE_ROOT: join(dir.path, 'artsvc'),
    ARTSVC_OIDC_ISSUER: op.issuer,
    ARTSVC_OIDC_CLIENT_ID: op.clientId,
    ARTSVC_OIDC_CLIENT_SECRET: op.clientSecret,
    ARTSVC_OAUTH_AUDIENCE: 'https://artsvc.bench',
    ARTSVC_VIEWER_TICKET_TTL: '30m',
    ARTSVC_LOG_LEVEL: 'warn',
    // ARTSVC_HTTP_LANE=false: the lean path behind node:http (the figures before the kit's HTTP lane).
    ...(process.env.ARTSVC_HTTP_LANE ? { ARTSVC_HTTP_LANE: process.env.ARTSVC_HTTP_LANE } : {}),
  },
  logFile: join(dir.path, 'artsvc.log'),
  probe: async () => (await fetch(`${base}/readyz`)).status === 204,
})
const auth = {
  authorization: `Bearer ${await op.mintAccessToken({ sub: 'bench', scope: 'artsvc:mcp', audience: 'https://artsvc.bench' })}`,
}

const phases = { put: [] as number[], commit: [] as number[] }

async function publish(zip: Buffer, title: string) {
  const session = (await (
    await fetch(`${base}/api/v1/artifacts/uploads`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ title, entrypoint: 'index.html' }),
    })
  ).json()) as { id: string; upload_url: string; upload_token: string }
  let t = performance.now()
  const put = await fetch(session.upload_url, {
    method: 'PUT',
    headers: { 'x-artsvc-upload-token': session.upload_token },
    body: new Uint8Array(zip),
  })
  if (put.status !== 200) throw new Error(`upload failed: ${put.status} ${await put.text()}`)
  phases.put.push(ms(t))
  t = performance.now()
  const commit = await fetch(`${base}/api/v1/uploads/${session.id}/commit`, {
    method: 'POST',
    headers: { ...auth, 'x-artsvc-upload-token': session.upload_token },
  })
  const body = (await commit.json()) as { artifact: { id: string } }
  if (commit.status !== 201) throw new Error(`commit failed: ${commit.status} ${JSON.stringify(body)}`)
  phases.commit.push(ms(t))
  return body.artifact.id
}

try {
  // 1. Publish a 25 MiB, 500-file bundle (fresh random content each run: blobs are content-addressed).
  const publishMs: number[] = []
  const unzipMs: number[] = []
  let zipBytes = 0
  // ARTSVC_BENCH_ONLY=content skips part 1 (for profiling the content origin).
  for (let run = 0; run < (process.env.ARTSVC_BENCH_ONLY === 'content' ? 0 : RUNS); run++) {
    const entries: ZipEntryInput[] = [{ name: 'index.html', data: '<!doctype html><p>bench</p>' }]
    for (let i = 1; i < 500; i++) entries.push({ name: `assets/${i}.bin`, data: randomBytes(52_000) })
    const zip = buildZip(entries)
    zipBytes = zip.length
    const file = join(dir.path, `bundle-${run}.zip`)
    writeFileSync(file, zip)
    let t0 = performance.now()
    execFileSync('/usr/bin/unzip', ['-tq', file], { stdio: 'ignore' })
    unzipMs.push(ms(t0))
    t0 = performance.now()
    await publish(zip, `bench ${run}`)
    publishMs.push(ms(t0))
  }

  // 2. Small files from the content origin vs nginx serving the same extracted files.
  const files: ZipEntryInput[] = [{ name: 'index.html', data: '<!doctype html><p>small</p>' }]
  for (let i = 0; i < 100; i++) {
    files.push({
      name: `js/m${i}.js`,
      data: `export const v${i} = ${JSON.stringify(randomBytes(600 + (i % 5) * 300).toString('base64'))}\n`,
    })
    files.push({
      name: `css/s${i}.css`,
      data: `.c${i} { content: ${JSON.stringify(randomBytes(400).toString('hex'))} }\n`,
    })
  }
  /** Publish the small files; the content origin's path prefix of the new version (its ticket). */
  const publishSite = async (title: string) => {
    const artifact = await publish(buildZip(files), title)
    const page = await (await fetch(`${base}/a/${artifact}`, { headers: auth })).text()
    const frame = new URL(/<iframe[^>]*src="([^"]+)"/.exec(page)![1]!.replaceAll('&amp;', '&'))
    return frame.pathname.replace(/index\.html$/, '')
  }
  const prefix = await publishSite('small files')
  const names = files.slice(1).map((f) => f.name as string)
  const www = join(dir.path, 'www')
  for (const f of files.slice(1)) {
    mkdirSync(dirname(join(www, f.name as string)), { recursive: true })
    writeFileSync(join(www, f.name as string), f.data as string)
  }
  const nginxPort = await freePort()
  mkdirSync(join(dir.path, 'nginx-tmp'))
  // A normally tuned static-file nginx (one worker, as artsvc is one Node process), sending
  // the same security headers as artsvc's content origin so both answer the same bytes.
  const hostHeader = { host: `localhost:${port}` }
  const contentHeaders = await new Promise<IncomingHttpHeaders>((resolve, reject) =>
    httpGet({ host: '127.0.0.1', port, path: prefix + names[0], headers: hostHeader }, (res) => {
      res.resume()
      resolve(res.headers)
    }).on('error', reject),
  )
  const same = [
    'content-security-policy',
    'access-control-allow-origin',
    'cross-origin-resource-policy',
    'referrer-policy',
  ]
  const addHeaders = same.map((h) => `    add_header ${h} "${contentHeaders[h]}" always;`).join('\n')
  writeFileSync(
    join(dir.path, 'nginx.conf'),
    `${process.getuid?.() === 0 ? 'user root;\n' : ''}worker_processes 1;
daemon off;
pid ${dir.path}/nginx.pid;
error_log ${dir.path}/nginx-error.log;
events { worker_connections 1024; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_requests 1000000;
  open_file_cache max=1000 inactive=60s;
  open_file_cache_valid 60s;
  client_body_temp_path ${dir.path}/nginx-tmp;
  proxy_temp_path ${dir.path}/nginx-tmp;
  fastcgi_temp_path ${dir.path}/nginx-tmp;
  uwsgi_temp_path ${dir.path}/nginx-tmp;
  scgi_temp_path ${dir.path}/nginx-tmp;
  server {
    listen 127.0.0.1:${nginxPort};
    root ${www};
    add_header x-content-type-options nosniff always;
${addHeaders}
    add_header cache-control "private, max-age=60" always;
  }
}
`,
  )
  const nginx = await startChild({
    name: 'nginx',
    command: '/usr/sbin/nginx',
    args: ['-c', join(dir.path, 'nginx.conf'), '-e', join(dir.path, 'nginx-error.log')],
    logFile: join(dir.path, 'nginx.log'),
    probe: async () => (await fetch(`http://127.0.0.1:${nginxPort}/js/m0.js`)).status === 200,
  })
  // Part 3's sites: the same files published once per connection (the blobs are shared). Each
  // connection starts with /favicon.ico, which the sites lack, as a browser's first one does.
  const siteRequests: Buffer[][] = []
  for (let i = 0; i < CONNECTIONS; i++) {
    const sitePrefix = await publishSite(`site ${i}`)
    siteRequests.push(
      ['favicon.ico', ...names].map((n) => buildHttpRequest({ path: sitePrefix + n, host: hostHeader.host })),
    )
  }
  const artsvcLoadOptions = {
    host: '127.0.0.1',
    port,
    requests: names.map((n) => buildHttpRequest({ path: prefix + n, host: hostHeader.host })),
    connections: CONNECTIONS,
  }
  const nginxLoadOptions = {
    host: '127.0.0.1',
    port: nginxPort,
    requests: names.map((n) => buildHttpRequest({ path: `/${n}`, host: `127.0.0.1:${nginxPort}` })),
    connections: CONNECTIONS,
  }
  const ok = (status: number) => status === 200
  const nginxPausedRequests = ['favicon.ico', ...names].map((n) =>
    buildHttpRequest({ path: `/${n}`, host: `127.0.0.1:${nginxPort}` }),
  )
  const okOrMissing = (status: number) => status === 200 || status === 404
  const rounds: { artsvc: HttpLoadResult; nginx: HttpLoadResult; load: number }[] = []
  // Server CPU time during the measured rounds: CPU per request is far less sensitive to
  // other load on the machine than requests/s.
  const cpu = { artsvc: { user: 0, sys: 0 }, nginx: { user: 0, sys: 0 } }
  const paused = {
    artsvc: { user: 0, sys: 0, requests: 0, errors: 0 },
    nginx: { user: 0, sys: 0, requests: 0, errors: 0 },
  }
  // The kit's HTTP lane: requests held while the lean path warmed its caches, connections
  // handed to node:http. Each reading is a request to the API host on a new connection, which
  // the lane hands over: not counted.
  let readings = 0
  const laneCounts = async () => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { connection: 'close' } })
    const text = await res.text()
    const count = (name: string) => Number(new RegExp(`^artsvc_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0)
    readings++
    return {
      held: count('http_lane_held_total'),
      handedOver: Math.max(0, count('http_lane_handovers_total') - readings),
    }
  }
  let lane = { held: 0, handedOver: 0 }
  try {
    await httpLoad({ ...artsvcLoadOptions, ok, durationMs: 2000 })
    await httpLoad({ ...nginxLoadOptions, ok, durationMs: 2000 })
    for (let r = 0; r < ROUNDS; r++) {
      const count = (k: 'artsvc' | 'nginx', before: { user: number; sys: number }, after: typeof before) => {
        cpu[k].user += after.user - before.user
        cpu[k].sys += after.sys - before.sys
      }
      let c = cpuMs(child.pid)
      const a = await httpLoad({ ...artsvcLoadOptions, ok, durationMs: ROUND_SECONDS * 1000 })
      count('artsvc', c, cpuMs(child.pid))
      c = cpuMs(nginx.pid)
      const n = await httpLoad({ ...nginxLoadOptions, ok, durationMs: ROUND_SECONDS * 1000 })
      count('nginx', c, cpuMs(nginx.pid))
      rounds.push({ artsvc: a, nginx: n, load: loadavg()[0]! })
    }
    lane = await laneCounts()
    // Keep-alive connections that go quiet for longer than artsvc's one-second liveness entry,
    // as a browser's between page views, each on a site of its own (no other traffic renews its
    // entry): each first request after a pause finds the entry expired.
    for (let r = 0; r < PAUSED_ROUNDS; r++) {
      for (const [k, options, pid] of [
        ['artsvc', artsvcLoadOptions, child.pid],
        ['nginx', nginxLoadOptions, nginx.pid],
      ] as const) {
        const c = cpuMs(pid!)
        const result = await httpLoad({
          ...options,
          ok: okOrMissing,
          durationMs: PAUSED_SECONDS * 1000,
          pause: PAUSE,
          ...(k === 'artsvc' ? { perConnection: siteRequests } : { requests: nginxPausedRequests }),
        })
        const after = cpuMs(pid!)
        paused[k].user += after.user - c.user
        paused[k].sys += after.sys - c.sys
        paused[k].requests += result.requests
        paused[k].errors += result.errors
      }
    }
  } finally {
    await nginx.stop('SIGQUIT')
  }
  const lanePaused = await laneCounts()
  const total = (k: 'artsvc' | 'nginx') => {
    const rs = rounds.map((r) => r[k])
    const requests = rs.reduce((a, r) => a + r.requests, 0)
    const seconds = rs.reduce((a, r) => a + r.seconds, 0)
    return { requests, errors: rs.reduce((a, r) => a + r.errors, 0), rps: requests / seconds }
  }
  const artsvcLoad = total('artsvc')
  const nginxLoad = total('nginx')
  const ratios = rounds.map((r) => r.artsvc.rps / r.nginx.rps)

  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}`
  const pub = median(publishMs)
  const unz = median(unzipMs)
  console.log(
    `machine: ${machine}; load average at the end ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  )
  if (publishMs.length > 0) {
    console.log(
      `\n1. publish (upload + validate + commit) of a ${(zipBytes / 2 ** 20).toFixed(1)} MiB, 500-file ZIP, median of ${RUNS}`,
    )
    console.log(
      `   artsvc:           ${pub.toFixed(0)} ms  (${(zipBytes / 2 ** 20 / (pub / 1000)).toFixed(1)} MiB/s)   runs: ${publishMs.map((x) => x.toFixed(0)).join(', ')}`,
    )
    console.log(
      `   of which PUT (stream + hash to staging) ${median(phases.put.slice(0, RUNS)).toFixed(0)} ms, commit (validate, inflate, CRC, SHA-256, fsync, store, DB) ${median(phases.commit.slice(0, RUNS)).toFixed(0)} ms`,
    )
    console.log(`   baseline unzip -t: ${unz.toFixed(0)} ms   runs: ${unzipMs.map((x) => x.toFixed(0)).join(', ')}`)
    console.log(`   ratio artsvc / unzip -t: ${(pub / unz).toFixed(2)}× the time`)
  }
  console.log(
    `\n2. content origin, ${names.length} small files (0.4-2 KiB js/css), ${CONNECTIONS} keep-alive connections, ${ROUNDS} alternating rounds of ${ROUND_SECONDS} s each`,
  )
  for (const [i, r] of rounds.entries()) {
    console.log(
      `   round ${i + 1}: artsvc ${r.artsvc.rps.toFixed(0)} req/s, nginx ${r.nginx.rps.toFixed(0)} req/s, ratio ${ratios[i]!.toFixed(2)} (load ${r.load.toFixed(1)})`,
    )
  }
  console.log(
    `   artsvc:         ${artsvcLoad.rps.toFixed(0)} req/s  (${artsvcLoad.requests} ok, ${artsvcLoad.errors} errors)`,
  )
  console.log(
    `   baseline nginx: ${nginxLoad.rps.toFixed(0)} req/s  (${nginxLoad.requests} ok, ${nginxLoad.errors} errors)`,
  )
  const us = (k: 'artsvc' | 'nginx', n: number) => {
    const per = (ms: number) => (ms * 1000) / n
    return { all: per(cpu[k].user + cpu[k].sys), user: per(cpu[k].user), sys: per(cpu[k].sys) }
  }
  const ua = us('artsvc', artsvcLoad.requests)
  const un = us('nginx', nginxLoad.requests)
  console.log(
    `   server CPU per request: artsvc ${ua.all.toFixed(1)} µs (user ${ua.user.toFixed(1)}, system ${ua.sys.toFixed(1)}), nginx ${un.all.toFixed(1)} µs (user ${un.user.toFixed(1)}, system ${un.sys.toFixed(1)}); nginx/artsvc ${(un.all / ua.all).toFixed(2)}`,
  )
  console.log(
    `   HTTP lane: ${lane.held} requests held while the caches warmed, ${lane.handedOver} connections handed to node:http (of ${(ROUNDS + 1) * CONNECTIONS} in the rounds and warm-up)`,
  )
  const perRequest = (k: 'artsvc' | 'nginx') => ((paused[k].user + paused[k].sys) * 1000) / paused[k].requests
  console.log(
    `\n3. content origin, the same files on a site per connection, each connection asking first for a missing /favicon.ico (404), ${CONNECTIONS} keep-alive connections that send for ${PAUSE.everyMs} ms, then pause ${PAUSE.forMs} ms; ${PAUSED_ROUNDS} alternating rounds of ${PAUSED_SECONDS} s`,
  )
  console.log(
    `   artsvc ${paused.artsvc.requests} ok, ${paused.artsvc.errors} errors, ${perRequest('artsvc').toFixed(1)} µs CPU per request; nginx ${paused.nginx.requests} ok, ${paused.nginx.errors} errors, ${perRequest('nginx').toFixed(1)} µs; nginx/artsvc ${(perRequest('nginx') / perRequest('artsvc')).toFixed(2)}`,
  )
  console.log(
    `   HTTP lane: ${lanePaused.held - lane.held} requests held, ${lanePaused.handedOver - lane.handedOver} connections handed to node:http (of ${PAUSED_ROUNDS * CONNECTIONS})`,
  )
  console.log(
    `   ratio artsvc / nginx: median of rounds ${median(ratios).toFixed(2)}, min ${Math.min(...ratios).toFixed(2)}, totals ${(artsvcLoad.rps / nginxLoad.rps).toFixed(2)} (goal >= 0.5)`,
  )
} finally {
  await child.stop()
  await op.stop()
  dir.remove()
}
