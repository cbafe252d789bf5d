#!/usr/bin/env node
// Prepares a checkout for `npm start` and `npm test`: npm dependencies and the Debian
// packages the suites and the local stack use. Plain JavaScript so it runs on the
// system Node (20 on these machines) before the pinned Node 24 is installed.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

// Debian package -> a file it installs, used to tell whether it is present without dpkg.
const systemPackages = {
  postgresql: '/usr/lib/postgresql',
  'redis-server': '/usr/bin/redis-server',
  'redis-sentinel': '/usr/bin/redis-sentinel',
  knot: '/usr/sbin/knotd',
  'knot-dnsutils': '/usr/bin/kdig',
  'knot-dnssecutils': '/usr/bin/kzonecheck',
  'knot-resolver': '/usr/sbin/kresd',
  'lua-cqueues': '/usr/share/lua/5.1/cqueues.lua',
  // kresd's /metrics, which dnsctl's Prometheus upstream test scrapes.
  'knot-resolver-module-http': '/usr/lib/x86_64-linux-gnu/knot-resolver/kres_modules/http.lua',
  'openssh-server': '/usr/sbin/sshd',
  'openssh-client': '/usr/bin/ssh',
  'dropbear-bin': '/usr/bin/dbclient',
  chromium: '/usr/bin/chromium',
  openssl: '/usr/bin/openssl',
  nginx: '/usr/sbin/nginx',
  unzip: '/usr/bin/unzip',
  // The READMEs' script examples read a command's --json output with it (notify hook create).
  jq: '/usr/bin/jq',
  // websignal's benchmark compares against GoAccess in the same run.
  goaccess: '/usr/bin/goaccess',
  // dnsctl's optional metrics-history upstream is tested against a real Prometheus.
  prometheus: '/usr/bin/prometheus',
  // tlsgate's JA3 values are checked against Wireshark's dissector (tshark reads a pcap).
  tshark: '/usr/bin/tshark',
  // The gates' splice helper (packages/kit/native) is built with the system C compiler.
  gcc: '/usr/bin/gcc',
  'libc6-dev': '/usr/include/stdio.h',
  // `ss` shows a socket's timers: the kit's test that PostgreSQL connections keep alive.
  iproute2: '/bin/ss',
}

function say(line) {
  process.stderr.write(`bootstrap: ${line}\n`)
}

function fail(line) {
  say(line)
  process.exit(1)
}

function ensureSystemPackages() {
  const missing = Object.entries(systemPackages)
    .filter(([, file]) => !existsSync(file))
    .map(([name]) => name)
  if (missing.length === 0) return
  const list = missing.join(' ')
  if (process.platform !== 'linux' || !existsSync('/usr/bin/apt-get')) {
    fail(`missing system packages (${list}) and no apt-get here: install them with your package manager`)
  }
  if (process.getuid?.() !== 0) {
    fail(`missing system packages; as root run: apt-get install -y ${list}`)
  }
  say(`installing system packages: ${list}`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  const opts = { stdio: ['ignore', 'ignore', 'inherit'], env }
  let r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], opts)
  if (r.status !== 0) {
    // A stale or missing package index is the usual cause: refresh once and retry.
    spawnSync('apt-get', ['update'], opts)
    r = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], opts)
  }
  if (r.status !== 0) fail(`apt-get install ${list} failed (exit ${r.status})`)
  // Debian starts services on install; the suites start their own servers on free ports,
  // and a system sshd/nginx/knot would only hold the standard ports.
  for (const svc of ['ssh', 'nginx', 'knot']) {
    spawnSync('sh', ['-c', `command -v systemctl >/dev/null && systemctl disable --now ${svc}`], { stdio: 'ignore' })
  }
}

function ensureNodeModules() {
  const lock = join(root, 'package-lock.json')
  const marker = join(root, 'node_modules', '.package-lock.json')
  const fresh = existsSync(marker) && existsSync(lock) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs
  if (fresh) return
  say(existsSync(lock) ? 'installing npm dependencies (npm ci)' : 'installing npm dependencies (npm install)')
  try {
    execFileSync('npm', [existsSync(lock) ? 'ci' : 'install', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
    })
  } catch (err) {
    fail(`npm dependencies could not be installed (exit ${err.status ?? 'unknown'})`)
  }
}

ensureSystemPackages()
ensureNodeModules()
ensureSpliceHelper()

// The gates' splice helper is built by npm's postinstall; a checkout whose node_modules
// predates it (or whose C source changed since) builds it here.
function ensureSpliceHelper() {
  const source = join(root, 'packages/kit/native/splice-relay.c')
  const helper = join(root, 'packages/kit/native/build/splice-relay')
  if (existsSync(helper) && statSync(helper).mtimeMs >= statSync(source).mtimeMs) return
  spawnSync(join(root, 'node_modules/.bin/node'), [join(root, 'packages/kit/scripts/build-splice-relay.ts')], {
    stdio: ['ignore', 'inherit', 'inherit'],
  })
}
