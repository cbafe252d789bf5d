/**
 * `npm start` support: runs edgegate on embedded defaults (SQLite under ctx.dataDir, HTTPS on
 * 127.0.0.1:8443) with a locally generated CA and server certificate, an administrator token,
 * an `sshgate` node (instance `sshgate-1`) for the SSH gate and a `tlsgate` node (`tlsgate-1`)
 * for the TLS gate; both gates read their token from credentials.json and sync with it.
 * Everything generated is kept in ctx.dataDir (credentials.json, tls/) so a restart reuses it.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { chmodSync, createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { get as httpsGet } from 'node:https'
import { join } from 'node:path'
import type { StackService, StartStack } from '../../packages/kit/src/stack.ts'
import { ensurePortFree, shownPath, supervise, waitHttp } from '../../packages/kit/src/stack-ready.ts'

const HOST = '127.0.0.1'
const PORT = 8443
const NODE_ID = 'sshgate-1'
const TLS_NODE_ID = 'tlsgate-1'

interface Credentials {
  adminToken: string
  /** The SSH gate's node (the field names predate the TLS gate's, and stay for kept files). */
  nodeId: string
  nodeToken: string
  tlsgateId?: string
  tlsgateToken?: string
}

/** A throwaway CA and a server certificate for 127.0.0.1 / localhost (openssl CLI). */
function ensureTls(dir: string): { ca: string; cert: string; key: string } {
  const ca = join(dir, 'ca.crt')
  const cert = join(dir, 'server.crt')
  const key = join(dir, 'server.key')
  if (existsSync(ca) && existsSync(cert) && existsSync(key)) return { ca, cert, key }
  mkdirSync(dir, { recursive: true })
  const ssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  ssl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '365',
    '-subj',
    '/CN=edgegate local CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ])
  ssl(['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost'])
  writeFileSync(
    join(dir, 'server.ext'),
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\n',
  )
  ssl([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '365',
    '-extfile',
    'server.ext',
  ])
  return { ca, cert, key }
}

/** An edgegate admin command on the stack's database; its printed token. */
function runCli(ctx: Parameters<StartStack>[0], database: string, args: string[]): string {
  const main = join(ctx.root, 'apps', 'edgegate', 'src', 'main.ts')
  const r = spawnSync(ctx.node, [main, ...args], {
    env: { ...process.env, EDGEGATE_DATABASE: database },
    encoding: 'utf8',
  })
  const token = /token: (\S+)/.exec(r.stdout)?.[1]
  if (r.status !== 0 || !token) throw new Error(`edgegate ${args.join(' ')} failed: ${r.stderr.trim()}`)
  return token
}

const saveCredentials = (dataDir: string, c: Credentials) =>
  writeFileSync(join(dataDir, 'credentials.json'), `${JSON.stringify(c, null, 2)}\n`, { mode: 0o600 })

/** GET /v1/policy as the node: its HTTP status (401 once its token was rotated), 0 when nothing answered. */
function policyStatus(base: string, ca: Buffer, id: string, token: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpsGet(
      `${base}/v1/policy?instance_id=${encodeURIComponent(id)}`,
      { ca, headers: { authorization: `Bearer ${token}` }, timeout: 5000 },
      (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      },
    )
    req.on('timeout', () => req.destroy())
    req.on('error', () => resolve(0))
  })
}

/**
 * A kept gate token the server no longer takes (someone ran `node rotate-token` on a demo node,
 * as the gates' READMEs describe) would leave that gate failing every sync, also after a
 * restart: re-key it, of its kind only, and keep the new token for the gate started next.
 */
async function rekeyStale(
  ctx: Parameters<StartStack>[0],
  database: string,
  base: string,
  ca: Buffer,
  c: Credentials,
): Promise<Credentials> {
  const nodes = [
    { id: c.nodeId, kind: 'sshgate', token: c.nodeToken, key: 'nodeToken' as const },
    ...(c.tlsgateId && c.tlsgateToken
      ? [{ id: c.tlsgateId, kind: 'tlsgate', token: c.tlsgateToken, key: 'tlsgateToken' as const }]
      : []),
  ]
  let out = c
  for (const n of nodes) {
    if ((await policyStatus(base, ca, n.id, n.token)) !== 401) continue
    try {
      out = { ...out, [n.key]: runCli(ctx, database, ['node', 'rotate-token', '--kind', n.kind, n.id]) }
      saveCredentials(ctx.dataDir, out)
      ctx.log(`the kept token of node ${n.id} no longer worked (rotated by hand?): it has a new one, kept for its gate`)
    } catch (err) {
      ctx.log(`the kept token of node ${n.id} no longer works and it could not be re-keyed (${(err as Error).message})`)
    }
  }
  return out
}

function credentials(ctx: Parameters<StartStack>[0], database: string): Credentials {
  const file = join(ctx.dataDir, 'credentials.json')
  const main = join(ctx.root, 'apps', 'edgegate', 'src', 'main.ts')
  const run = (args: string[]) => runCli(ctx, database, args)
  const save = (c: Credentials) => saveCredentials(ctx.dataDir, c)
  if (existsSync(file)) {
    const kept = JSON.parse(readFileSync(file, 'utf8')) as Credentials
    if (kept.tlsgateToken) return kept
    // Kept by a stack from before the TLS gate synced: register it now. Someone who followed the
    // old hint (node add --kind tlsgate tlsgate-1 by hand) has the node but not its token, which
    // is shown once: a new token for it is the only way to have one here. Rotated only when the
    // node is a tlsgate one: one added by hand with another kind would get 403 wrong_node_kind on
    // every pull with its new token, so the gate runs without sync and this says why.
    let token: string
    try {
      token = run(['node', 'add', '--kind', 'tlsgate', TLS_NODE_ID])
    } catch {
      try {
        token = run(['node', 'rotate-token', '--kind', 'tlsgate', TLS_NODE_ID])
      } catch (err) {
        ctx.log(
          `could not register ${TLS_NODE_ID} (${(err as Error).message}): the TLS gate will not sync. ` +
            `Check the node with: bin/edgegate node show ${TLS_NODE_ID}; the demo registers it itself in a fresh data folder (move ${shownPath(ctx.root, ctx.dataDir)} away)`,
        )
        return kept
      }
    }
    const c = { ...kept, tlsgateId: TLS_NODE_ID, tlsgateToken: token }
    save(c)
    ctx.log(`registered the TLS gate as node ${TLS_NODE_ID} (kind tlsgate)`)
    return c
  }
  // Admin commands refuse a database that does not exist: create it first.
  const migrated = spawnSync(ctx.node, [main, 'migrate'], { env: { ...process.env, EDGEGATE_DATABASE: database } })
  if (migrated.status !== 0) throw new Error(`edgegate migrate failed: ${String(migrated.stderr).trim()}`)
  const c: Credentials = {
    adminToken: run(['admin', 'add', 'admin']),
    nodeId: NODE_ID,
    nodeToken: run(['node', 'add', '--kind', 'sshgate', NODE_ID]),
    tlsgateId: TLS_NODE_ID,
    tlsgateToken: run(['node', 'add', '--kind', 'tlsgate', TLS_NODE_ID]),
  }
  save(c)
  return c
}

export const startStack: StartStack = async (ctx) => {
  const port = ctx.port(PORT)
  const LISTEN = `${HOST}:${port}`
  const BASE = `https://${LISTEN}`
  await ensurePortFree('edgegate', HOST, port, 'HTTPS')
  const tls = ensureTls(join(ctx.dataDir, 'tls'))
  const database = `sqlite:${join(ctx.dataDir, 'edgegate.db')}`
  // What bin/edgegate reads by default (EDGEGATE_CONFIG): the admin commands reach this database,
  // and `status` asks the server at this address whether it answers.
  // The control socket lets `bin/edgegate status` ask serve without TLS; off when the stack's
  // folder is too deep for a Unix socket's path.
  const socket = join(ctx.dataDir, 'control.sock')
  const controlSocket = Buffer.byteLength(socket) <= 100 ? socket : ''
  // Owner-only: `database` is a secret field (a PostgreSQL URL carries its password), and every
  // command reading a world-readable file holding one warns about it. A kept file is tightened too.
  const configFile = join(ctx.dataDir, 'config.json')
  writeFileSync(
    configFile,
    `${JSON.stringify({ database, listen: LISTEN, control_socket: controlSocket }, null, 2)}\n`,
    { mode: 0o600 },
  )
  chmodSync(configFile, 0o600)
  let c = credentials(ctx, database)
  const logFile = join(ctx.dataDir, 'edgegate.log')
  const log = createWriteStream(logFile, { flags: 'a' })
  const child = spawn(
    ctx.node,
    [
      join(ctx.root, 'apps', 'edgegate', 'src', 'main.ts'),
      'serve',
      '--listen',
      LISTEN,
      '--database',
      database,
      '--tls-cert',
      tls.cert,
      '--tls-key',
      tls.key,
      '--client-ca',
      tls.ca,
      '--control-socket',
      controlSocket,
    ],
    { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  child.stdout!.pipe(log)
  child.stderr!.pipe(log)
  const running = supervise(child, { what: 'edgegate', log: ctx.log, logFile })
  try {
    await waitHttp({
      app: 'edgegate',
      url: `${BASE}/readyz`,
      ca: readFileSync(tls.ca),
      timeoutMs: 30_000,
      child,
      logFile,
    })
  } catch (err) {
    await running.stop()
    throw err
  }
  running.ready()
  c = await rekeyStale(ctx, database, BASE, readFileSync(tls.ca), c)
  const service: StackService = {
    urls: { dashboard: `${BASE}/`, api: BASE },
    credentials: {
      'administrator token (dashboard sign-in, /api/*)': c.adminToken,
      [`node ${c.nodeId} (sshgate) token`]: c.nodeToken,
      ...(c.tlsgateToken ? { [`node ${c.tlsgateId} (tlsgate) token`]: c.tlsgateToken } : {}),
      'CA certificate (trust it to reach the control plane)': tls.ca,
      kept: join(ctx.dataDir, 'credentials.json'),
    },
    notes: [
      'the certificate is issued by a local CA:',
      `$ curl --cacert ${shownPath(ctx.root, tls.ca)} ${BASE}/readyz`,
      'administer it (bin/edgegate reads the database from the config file the stack wrote):',
      '$ bin/edgegate status',
      '$ bin/edgegate node list',
      '$ bin/edgegate admin list',
      'the policy a gate pulls:',
      `$ curl --cacert ${shownPath(ctx.root, tls.ca)} -H "Authorization: Bearer ${c.nodeToken}" "${BASE}/v1/policy?instance_id=${c.nodeId}"`,
    ],
    async stop() {
      await running.stop()
      log.end()
    },
  }
  return service
}
