/**
 * A real OpenSSH server on a free loopback port (temporary ed25519 host key, one
 * authorized test key) and helpers that run the real OpenSSH `ssh` and Dropbear
 * `dbclient` clients against any port (the server itself or a proxy in front of it).
 */
import { execFile, execFileSync } from 'node:child_process'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startChild } from './child.ts'
import { freePort, isRoot, requireBinary, tempDir } from './env.ts'

const run = promisify(execFile)

export interface SshdOptions {
  /** `VersionAddendum`: changes the server identification string. */
  versionAddendum?: string
  /** Extra sshd_config lines. */
  extraConfig?: string[]
}

export interface ClientKey {
  /** OpenSSH private key path. */
  path: string
  /** Dropbear format of the same key. */
  dropbearPath: string
  publicKey: string
}

export interface Sshd {
  port: number
  /** Folder holding the config, keys and logs. */
  dir: string
  configFile: string
  /** The user the test key logs in as. */
  user: string
  key: ClientKey
  /** The server's identification line, e.g. `SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u7`. */
  identification(): Promise<string>
  /** Restart with a different VersionAddendum (same port, keys and authorized key). */
  restart(options?: SshdOptions): Promise<void>
  log(): string
  stop(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/** Generate an ed25519 client key (OpenSSH and Dropbear formats) in `dir`. */
export function generateClientKey(dir: string, name = 'id_ed25519'): ClientKey {
  const keygen = requireBinary('/usr/bin/ssh-keygen', 'openssh-client')
  const path = join(dir, name)
  execFileSync(keygen, ['-q', '-t', 'ed25519', '-N', '', '-C', 'gatehouse-test', '-f', path])
  const dropbearPath = `${path}.db`
  const convert = requireBinary('/usr/bin/dropbearconvert', 'dropbear-bin')
  execFileSync(convert, ['openssh', 'dropbear', path, dropbearPath], { stdio: 'ignore' })
  return { path, dropbearPath, publicKey: readFileSync(`${path}.pub`, 'utf8').trim() }
}

function sshdConfig(dir: string, port: number, options: SshdOptions): string {
  return [
    `Port ${port}`,
    'ListenAddress 127.0.0.1',
    `HostKey ${join(dir, 'host_ed25519')}`,
    `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
    `PidFile ${join(dir, 'sshd.pid')}`,
    'UsePAM no',
    'StrictModes no',
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PermitRootLogin prohibit-password',
    'LogLevel VERBOSE',
    'MaxStartups 200:30:400',
    'MaxSessions 50',
    ...(options.versionAddendum ? [`VersionAddendum ${options.versionAddendum}`] : []),
    ...(options.extraConfig ?? []),
    '',
  ].join('\n')
}

/** @example const sshd = await startSshd(); after(() => sshd.stop()); await sshClient({ port: sshd.port, key: sshd.key }) */
export async function startSshd(options: SshdOptions = {}): Promise<Sshd> {
  const sshdBin = requireBinary('/usr/sbin/sshd', 'openssh-server')
  const keygen = requireBinary('/usr/bin/ssh-keygen', 'openssh-client')
  if (isRoot) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 })
  const tmp = tempDir('gatehouse-sshd-')
  const dir = tmp.path
  chmodSync(dir, 0o755)
  execFileSync(keygen, ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'host_ed25519')])
  const key = generateClientKey(dir)
  writeFileSync(join(dir, 'authorized_keys'), `${key.publicKey}\n`, { mode: 0o600 })
  const port = await freePort()
  const configFile = join(dir, 'sshd_config')
  const logFile = join(dir, 'sshd.log')
  const launch = async (opts: SshdOptions) => {
    writeFileSync(configFile, sshdConfig(dir, port, opts))
    return startChild({
      name: 'sshd',
      command: sshdBin,
      args: ['-f', configFile, '-D', '-e'],
      logFile,
      readyLine: /Server listening on 127\.0\.0\.1 port/,
    })
  }
  let child = await launch(options)
  const stop = async () => {
    await child.stop()
    tmp.remove()
  }
  return {
    port,
    dir,
    configFile,
    user: userInfo().username,
    key,
    identification: () => readIdentification(port),
    async restart(opts: SshdOptions = {}) {
      await child.stop()
      child = await launch(opts)
    },
    log: () => child.log(),
    stop,
    [Symbol.asyncDispose]: stop,
  }
}

/** Connect and read the server's identification line (without the CR LF). */
export async function readIdentification(port: number, host = '127.0.0.1'): Promise<string> {
  const { connect } = await import('node:net')
  return new Promise((resolve, reject) => {
    const socket = connect(port, host)
    let buf = ''
    socket.setTimeout(5000, () => {
      socket.destroy()
      reject(new Error(`no SSH identification from ${host}:${port}`))
    })
    socket.on('data', (d) => {
      buf += d.toString('latin1')
      const end = buf.indexOf('\n')
      if (end !== -1) {
        socket.destroy()
        resolve(buf.slice(0, end).replace(/\r$/, ''))
      }
    })
    socket.on('error', reject)
  })
}

export interface SshResult {
  code: number | null
  stdout: string
  stderr: string
}

export interface SshClientOptions {
  port: number
  key: ClientKey
  host?: string
  user?: string
  /** Remote command (default `true`). */
  command?: string
  /** Extra `-o` options for OpenSSH, e.g. `['HostKeyAlgorithms=ssh-ed25519']`. */
  options?: string[]
  /** Folder for known_hosts / HOME (default a fresh temp folder, so the fingerprint is stable). */
  home?: string
  timeoutMs?: number
  /** Bytes to send on standard input. */
  input?: Buffer | string
}

function collect(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  input?: Buffer | string,
): Promise<SshResult> {
  return new Promise((resolve) => {
    const child = execFile(
      command,
      args,
      { env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'buffer' },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: number }).code ?? null) : 0
        resolve({ code: typeof code === 'number' ? code : null, stdout: stdout.toString(), stderr: stderr.toString() })
      },
    )
    if (input !== undefined) child.stdin!.end(input)
    else child.stdin!.end()
  })
}

/**
 * OpenSSH client arguments with an empty known_hosts under `home` (the spec's stable
 * fingerprint case); for callers that spawn `ssh` themselves (e.g. to stream a transfer).
 */
export function sshArgs(options: SshClientOptions & { home: string }): string[] {
  return [
    '-F',
    '/dev/null',
    '-i',
    options.key.path,
    '-p',
    String(options.port),
    '-o',
    'BatchMode=yes',
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    `UserKnownHostsFile=${join(options.home, 'known_hosts')}`,
    '-o',
    'GlobalKnownHostsFile=/dev/null',
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'ConnectTimeout=10',
    '-o',
    'LogLevel=ERROR',
    ...(options.options ?? []).flatMap((o) => ['-o', o]),
    `${options.user ?? userInfo().username}@${options.host ?? '127.0.0.1'}`,
    options.command ?? 'true',
  ]
}

/** Run the OpenSSH client with an empty known_hosts (the spec's stable fingerprint case). */
export async function sshClient(options: SshClientOptions): Promise<SshResult> {
  const ssh = requireBinary('/usr/bin/ssh', 'openssh-client')
  const home = options.home ?? tempDir('gatehouse-ssh-').path
  const args = sshArgs({ ...options, home })
  return collect(ssh, args, { ...process.env, HOME: home }, options.timeoutMs ?? 30_000, options.input)
}

/** Run Dropbear's client (a different KEXINIT, so a different fingerprint). */
export async function dropbearClient(options: SshClientOptions): Promise<SshResult> {
  const dbclient = requireBinary('/usr/bin/dbclient', 'dropbear-bin')
  const home = options.home ?? tempDir('gatehouse-dbclient-').path
  const args = [
    '-y',
    '-y',
    '-i',
    options.key.dropbearPath,
    '-p',
    String(options.port),
    `${options.user ?? userInfo().username}@${options.host ?? '127.0.0.1'}`,
    options.command ?? 'true',
  ]
  return collect(dbclient, args, { ...process.env, HOME: home }, options.timeoutMs ?? 30_000, options.input)
}

/** Version of the OpenSSH client, e.g. `OpenSSH_9.2p1`. */
export async function sshVersion(): Promise<string> {
  const { stderr } = await run(requireBinary('/usr/bin/ssh', 'openssh-client'), ['-V'])
  return stderr.trim()
}
