/**
 * Network namespaces for the HA tests (we run as root): each holds a dummy interface (or a
 * port-less bridge where the kernel has no dummy module) on which
 * the test adds and removes the VIP, the way keepalived moves it. Only namespaces created here
 * are touched; they are deleted at the end.
 */
import { execFileSync } from 'node:child_process'
import { requireBinary } from '@gatehouse/testkit'

export interface Netns {
  name: string
  addAddress(address: string): void
  removeAddress(address: string): void
  remove(): void
}

export function createNetns(tag: string): Netns {
  const ip = requireBinary('/usr/sbin/ip', 'iproute2')
  const name = `ghdns-${process.pid}-${tag}`
  const run = (...args: string[]) => execFileSync(ip, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  run('netns', 'add', name)
  try {
    try {
      run('-n', name, 'link', 'add', 'vip0', 'type', 'dummy')
    } catch {
      // Kernels without the dummy module (some containers): a bridge without ports is the same
      // kind of address-only interface.
      run('-n', name, 'link', 'add', 'vip0', 'type', 'bridge')
    }
    run('-n', name, 'link', 'set', 'vip0', 'up')
  } catch (err) {
    run('netns', 'del', name)
    throw err
  }
  const prefix = (a: string) => (a.includes(':') ? `${a}/128` : `${a}/32`)
  return {
    name,
    addAddress: (a) => void run('-n', name, 'address', 'add', prefix(a), 'dev', 'vip0'),
    removeAddress: (a) => void run('-n', name, 'address', 'del', prefix(a), 'dev', 'vip0'),
    remove() {
      try {
        run('netns', 'del', name)
      } catch {
        // already gone
      }
    },
  }
}
