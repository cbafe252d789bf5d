/**
 * `edgegate pki`: a private CA for mutual TLS between the nodes and the control plane, so a
 * fleet can use client certificates without an outside PKI. `init` makes the CA (EC P-256,
 * ten years by default) in a new owner-only folder; `issue` makes a server certificate for
 * `serve` or a client certificate for a node (397 days by default: the longest a browser
 * accepts, and short enough that renewal is a habit), whose CN and DNS name are the node's
 * instance id, the name `node add --cert-name` registers.
 *
 * Keys come from node:crypto and are written 0600 before anything else reads them; the
 * certificates are signed by the `openssl` CLI (Node cannot sign X.509), run without a shell.
 * Nothing is ever overwritten except by `issue --replace`, which renames the new pair over the
 * old one, so a `serve` reloading on SIGHUP sees the old pair or the new, never a half. The
 * CA key never leaves the folder: keep it offline, or on the control plane host only.
 */
import { execFile } from 'node:child_process'
import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { isIP } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { CliError, typedCommands, UsageError } from '@gatehouse/kit/cli/program.ts'
import { INSTANCE_ID_PATTERN } from '@gatehouse/kit/edge-limits.ts'
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '@gatehouse/kit/private-files.ts'
import { escapeTerminal } from '@gatehouse/kit/terminal.ts'

const out = (line: string) => void process.stdout.write(`${line}\n`)
/** A next step, spelled the way the user ran edgegate (`bin/edgegate pki issue …` in a checkout). */
const next = (command: string) => out(typedCommands(command, 'edgegate'))
const DNS_NAME =
  /^(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/
/** A path as one shell word, so a printed next step works when pasted. */
const word = (s: string) => (/^[A-Za-z0-9_./:@%+-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`)
const CA_KEY = 'ca.key'
const CA_CERT = 'ca.crt'

function days(value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1 || n > 36_500)
    throw new UsageError(`--days must be a whole number of days from 1 to 36500, got ${JSON.stringify(value)}`)
  return n
}

function openssl(args: string[], cwd: string): Promise<void> {
  return new Promise((done, fail) => {
    execFile('openssl', args, { cwd, timeout: 30_000 }, (err, _stdout, stderr) => {
      if (!err) return done()
      const missing = (err as NodeJS.ErrnoException).code === 'ENOENT'
      fail(
        new CliError(
          missing
            ? 'openssl not found: install it (Debian and Ubuntu: apt-get install openssl)'
            : `openssl ${args[0]} failed: ${String(stderr).trim().split('\n')[0] || err.message}`,
        ),
      )
    })
  })
}

/** A new P-256 key, written owner-only (PKCS#8 PEM, which openssl and Node both read). */
async function writeKey(path: string): Promise<void> {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  await writeFile(path, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: PRIVATE_FILE_MODE, flag: 'wx' })
}

/** `edgegate pki init DIR`: a new CA in a new folder (or an empty one). */
export async function pkiInit(dirArg: string, o: Record<string, unknown>): Promise<void> {
  const dir = resolve(dirArg)
  const validity = days(o.days, 3650)
  const name = (o.name as string | undefined) ?? 'Gatehouse edge CA'
  // It goes into an openssl config file: no $ (a variable), # (a comment) or separators.
  if (!/^[A-Za-z0-9][A-Za-z0-9 ._()-]{0,63}$/.test(name)) {
    throw new UsageError('--name must be 1 to 64 letters, digits, spaces and . _ ( ) -')
  }
  if (existsSync(join(dir, CA_KEY)) || existsSync(join(dir, CA_CERT))) {
    throw new CliError(`${dir} already holds a CA (${CA_KEY}, ${CA_CERT}); it is never overwritten`)
  }
  // Parents as the umask makes them (/etc/gatehouse holds other programs' config); the CA's own folder owner-only.
  await mkdir(dirname(dir), { recursive: true })
  await mkdir(dir, { mode: PRIVATE_DIR_MODE }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err
  })
  await writeKey(join(dir, CA_KEY))
  const config = `.ca.${process.pid}.cnf`
  try {
    await writeRequestConfig(join(dir, config), name, [
      'basicConstraints = critical,CA:TRUE,pathlen:0',
      'keyUsage = critical,keyCertSign,cRLSign',
      'subjectKeyIdentifier = hash',
    ])
    const args = ['-out', CA_CERT, '-days', String(validity), '-set_serial', serial()]
    await openssl(['req', '-x509', '-new', '-key', CA_KEY, '-config', config, ...args], dir)
  } catch (err) {
    await rm(join(dir, CA_KEY), { force: true })
    throw err
  } finally {
    await rm(join(dir, config), { force: true })
  }
  const cert = new X509Certificate(await readFile(join(dir, CA_CERT)))
  const d = escapeTerminal(word(dir))
  out(`CA "${escapeTerminal(name)}" created in ${d}, valid until ${cert.validToDate.toISOString()}`)
  out(`  ${d}/${CA_CERT}  give it to edgegate (--client-ca) and to every node (control_plane.ca)`)
  out(`  ${d}/${CA_KEY}  the CA's private key: keep it here, owner-only, and back it up offline`)
  out('Next:')
  next(`  edgegate pki issue ${d} --server <control plane host name or address>...`)
  next(`  edgegate pki issue ${d} --client <node instance id>`)
}

/**
 * A request config of our own, so neither the host's openssl.cnf nor its defaults decide the
 * subject or the extensions.
 */
function writeRequestConfig(path: string, commonName: string, extensions: string[]): Promise<void> {
  const text = [
    '[req]',
    'prompt = no',
    'distinguished_name = dn',
    'x509_extensions = ext',
    '[dn]',
    `CN = ${commonName}`,
    '[ext]',
    ...extensions,
  ]
  return writeFile(path, `${text.join('\n')}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' })
}

function serial(): string {
  // 16 random bytes, top bit clear (a positive INTEGER), as RFC 5280 asks of a CA.
  const b = randomBytes(16)
  b[0] = b[0]! & 0x7f
  return `0x${b.toString('hex')}`
}

/** `edgegate pki issue DIR --server NAME... | --client ID`. */
export async function pkiIssue(dirArg: string, o: Record<string, unknown>): Promise<void> {
  const dir = resolve(dirArg)
  const servers = (o.server as string[] | undefined) ?? []
  const client = o.client as string | undefined
  if (servers.length > 0 === (client !== undefined)) {
    throw new UsageError(
      'give --server NAME... (a certificate for edgegate serve) or --client ID (for a node), one of them',
    )
  }
  const validity = days(o.days, 397)
  for (const n of servers) {
    if (isIP(n) === 0 && !DNS_NAME.test(n))
      throw new UsageError(`--server ${JSON.stringify(n)} is neither a DNS name nor an IP address`)
  }
  if (client !== undefined && !new RegExp(INSTANCE_ID_PATTERN).test(client)) {
    throw new UsageError(`--client ${JSON.stringify(client)} is not an instance id (letters, digits, . _ -; up to 128)`)
  }
  if (!existsSync(join(dir, CA_KEY)) || !existsSync(join(dir, CA_CERT))) {
    throw new CliError(`${dir} holds no CA (${CA_KEY} and ${CA_CERT}): run edgegate pki init ${dirArg} first`)
  }
  const caCert = new X509Certificate(await readFile(join(dir, CA_CERT)))
  const base =
    client !== undefined ? `client-${client}` : `server-${servers[0]!.replaceAll(':', '_').replace(/^\*/, 'wildcard')}`
  const certFile = `${base}.crt`
  const keyFile = `${base}.key`
  if (!o.replace && (existsSync(join(dir, certFile)) || existsSync(join(dir, keyFile)))) {
    throw new CliError(`${join(dir, certFile)} exists; give --replace to issue a new key and certificate in its place`)
  }
  const expiresIn = caCert.validToDate.getTime() - Date.now()
  if (expiresIn < validity * 86_400_000) {
    throw new CliError(
      `the CA expires on ${caCert.validToDate.toISOString()}, before a ${validity}-day certificate would: give a shorter --days, or make a new CA`,
    )
  }
  const extensions =
    client !== undefined
      ? ['extendedKeyUsage = clientAuth', `subjectAltName = DNS:${client}`]
      : [
          'extendedKeyUsage = serverAuth',
          `subjectAltName = ${servers.map((n) => (isIP(n) ? `IP:${n}` : `DNS:${n}`)).join(',')}`,
        ]
  // New files under temporary names, renamed into place only when both exist.
  const tmp = `.${base}.${process.pid}.${randomBytes(4).toString('hex')}`
  const tmpKey = `${tmp}.key`
  const tmpCert = `${tmp}.crt`
  const tmpCsr = `${tmp}.csr`
  const tmpExt = `${tmp}.ext`
  try {
    await writeKey(join(dir, tmpKey))
    await writeRequestConfig(join(dir, tmpExt), client ?? servers[0]!, [])
    await openssl(['req', '-new', '-key', tmpKey, '-config', tmpExt, '-out', tmpCsr], dir)
    await rm(join(dir, tmpExt))
    const leaf = [
      'basicConstraints = critical,CA:FALSE',
      'keyUsage = critical,digitalSignature',
      'subjectKeyIdentifier = hash',
      'authorityKeyIdentifier = keyid',
      ...extensions,
    ]
    await writeFile(join(dir, tmpExt), `${leaf.join('\n')}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' })
    await openssl(
      [
        'x509',
        '-req',
        '-in',
        tmpCsr,
        '-CA',
        CA_CERT,
        '-CAkey',
        CA_KEY,
        '-set_serial',
        serial(),
        '-days',
        String(validity),
        '-sha256',
        '-extfile',
        tmpExt,
        '-out',
        tmpCert,
      ],
      dir,
    )
    await rename(join(dir, tmpKey), join(dir, keyFile))
    await rename(join(dir, tmpCert), join(dir, certFile))
  } finally {
    await Promise.all([tmpKey, tmpCert, tmpCsr, tmpExt].map((f) => rm(join(dir, f), { force: true })))
  }
  const cert = new X509Certificate(await readFile(join(dir, certFile)))
  const d = escapeTerminal(word(dir))
  out(`${client !== undefined ? 'client' : 'server'} certificate issued, valid until ${cert.validToDate.toISOString()}`)
  out(`  ${d}/${certFile}`)
  out(
    `  ${d}/${keyFile}  (owner-only; copy it to the ${client !== undefined ? 'node' : 'control plane host'} the same way)`,
  )
  if (client !== undefined) {
    out('Next:')
    next(`  edgegate node add --kind <sshgate|tlsgate|websignal> --cert-name ${client} ${client}`)
    const files = { client_cert: join(dir, certFile), client_key: join(dir, keyFile), ca: join(dir, CA_CERT) }
    out(`  copy the three files to the node (here at the same paths), then in its config file:`)
    out(`  "control_plane": ${escapeTerminal(JSON.stringify(files))}`)
  } else {
    out('Next:')
    next(`  edgegate serve --tls-cert ${d}/${certFile} --tls-key ${d}/${keyFile} --client-ca ${d}/${CA_CERT}`)
    out('  a running serve takes a renewed pair on SIGHUP')
  }
}

/** `edgegate pki list DIR`: the CA and every certificate in the folder, with when each expires. */
export async function pkiList(dirArg: string, o: Record<string, unknown>): Promise<void> {
  const { printList } = await import('@gatehouse/kit/cli/output.ts')
  const { EXPIRY_WARN_MS } = await import('@gatehouse/kit/certificate-expiry.ts')
  const dir = resolve(dirArg)
  let names: string[]
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.crt') && !n.startsWith('.')).sort()
  } catch (err) {
    throw new CliError(
      `${dir} cannot be read (${(err as NodeJS.ErrnoException).code}): give the folder of edgegate pki init`,
    )
  }
  const now = Date.now()
  const rows = []
  for (const name of names) {
    let cert: X509Certificate
    try {
      cert = new X509Certificate(await readFile(join(dir, name)))
    } catch {
      continue // not a certificate: not ours to list
    }
    const expires = cert.validToDate.getTime()
    rows.push({
      file: name,
      use: cert.ca ? 'ca' : name.startsWith('client-') ? 'client' : name.startsWith('server-') ? 'server' : 'other',
      subject: cert.subject.replaceAll('\n', ', '),
      names: cert.subjectAltName ?? '',
      expires_at: cert.validToDate.toISOString(),
      days_left: Math.floor((expires - now) / 86_400_000),
      expired: expires <= now,
    })
  }
  // The CA first (everything depends on it), then by expiry: what to renew first is on top.
  rows.sort((a, b) => (a.use === 'ca' ? -1 : b.use === 'ca' ? 1 : a.expires_at.localeCompare(b.expires_at)))
  printList(
    rows,
    [
      { header: 'FILE', value: (r) => r.file },
      { header: 'USE', value: (r) => r.use },
      { header: 'SUBJECT', value: (r) => r.subject },
      { header: 'EXPIRES', value: (r) => r.expires_at },
      {
        header: 'DAYS LEFT',
        value: (r) => (r.expired ? 'expired' : String(r.days_left)),
        style: (r) => (r.expired ? 'red' : r.days_left * 86_400_000 < EXPIRY_WARN_MS ? 'yellow' : undefined),
      },
    ],
    { json: o.json === true },
  )
}
