/**
 * The private OpenSSH server the demo gates (the testkit recipe, kept under the stack's data
 * folder so its keys and port survive a restart). It answers every login with a greeting
 * instead of a shell (ForceCommand), so approving a client in the demo grants nothing else.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import { join } from 'node:path'
import { ensurePortFree, StackError, waitSshBanner } from '../../packages/kit/src/stack-ready.ts'

export const GREETING = 'hello from the Gatehouse demo sshd: the SSH gate let you through'

export interface DemoSshd {
  port: number
  user: string
  /** Private key authorized to log in. */
  key: string
  /** known_hosts file holding the sshd host key for the gate's address. */
  knownHosts: string
  stop(): Promise<void>
}

function keygen(path: string, comment: string) {
  if (!existsSync(path)) execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', path])
}

/** Start sshd on 127.0.0.1:port; `gatePort` is where clients reach it (for known_hosts). */
export async function startDemoSshd(dir: string, port: number, gatePort: number): Promise<DemoSshd> {
  for (const bin of ['/usr/sbin/sshd', '/usr/bin/ssh-keygen']) {
    if (!existsSync(bin))
      throw new StackError(`sshproxy: ${bin} is missing (apt-get install -y openssh-server openssh-client)`)
  }
  await ensurePortFree('sshproxy', '127.0.0.1', port, 'demo sshd')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  // sshd run as root insists on its privilege-separation folder.
  if (process.getuid?.() === 0) mkdirSync('/run/sshd', { recursive: true, mode: 0o755 })
  const hostKey = join(dir, 'host_ed25519')
  const key = join(dir, 'id_ed25519')
  keygen(hostKey, 'gatehouse-demo-host')
  keygen(key, 'gatehouse-demo')
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(`${key}.pub`), { mode: 0o600 })
  // The host key is known before the first login: no trust-on-first-use prompt, and the client's
  // key-exchange offer (hence its fingerprint) is the same on the first connection and after.
  const knownHosts = join(dir, 'known_hosts')
  const hostPub = readFileSync(`${hostKey}.pub`, 'utf8').split(' ').slice(0, 2).join(' ')
  writeFileSync(knownHosts, `[127.0.0.1]:${gatePort} ${hostPub}\n`)
  const configFile = join(dir, 'sshd_config')
  writeFileSync(
    configFile,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'UsePAM no',
      'StrictModes no',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'PermitRootLogin prohibit-password',
      `ForceCommand echo '${GREETING}'`,
      'LogLevel VERBOSE',
      '',
    ].join('\n'),
  )
  const log = createWriteStream(join(dir, 'sshd.log'), { flags: 'a' })
  const child: ChildProcess = spawn('/usr/sbin/sshd', ['-f', configFile, '-D', '-e'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout!.pipe(log)
  child.stderr!.pipe(log)
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
    }
    log.end()
  }
  try {
    await waitSshBanner('sshproxy (demo sshd)', '127.0.0.1', port, 10_000)
  } catch (err) {
    await stop()
    throw err
  }
  return { port, user: userInfo().username, key, knownHosts, stop }
}
