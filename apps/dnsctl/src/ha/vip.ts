/**
 * Whether the virtual service address is assigned to a local interface: keepalived (or the
 * operator) moves it, dnsctl only looks. With a network namespace name the lookup runs
 * `ip -j -n NAME address show`, for a keepalived that lives in another namespace.
 */
import { execFile } from 'node:child_process'
import { networkInterfaces } from 'node:os'

export interface VipOwnership {
  address: string | null
  /** null: no VIP configured, or the lookup failed (see error). */
  owned: boolean | null
  interface: string | null
  error?: string
}

interface IpAddrJson {
  ifname: string
  addr_info?: { local?: string }[]
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase()
}

function inNamespace(netns: string, ip = '/usr/sbin/ip'): Promise<{ ifname: string; address: string }[]> {
  return new Promise((resolve, reject) => {
    execFile(ip, ['-j', '-n', netns, 'address', 'show'], { timeout: 5000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`ip -n ${netns} address show: ${(stderr || err.message).trim()}`))
      try {
        const links = JSON.parse(stdout) as IpAddrJson[]
        resolve(links.flatMap((l) => (l.addr_info ?? []).map((a) => ({ ifname: l.ifname, address: a.local ?? '' }))))
      } catch (e) {
        reject(new Error(`ip -n ${netns} address show printed no JSON: ${(e as Error).message}`))
      }
    })
  })
}

function inOwnNamespace(): { ifname: string; address: string }[] {
  return Object.entries(networkInterfaces()).flatMap(([ifname, list]) =>
    (list ?? []).map((a) => ({ ifname, address: a.address })),
  )
}

export async function vipOwnership(vip: string | undefined, netns?: string): Promise<VipOwnership> {
  if (vip === undefined) return { address: null, owned: null, interface: null }
  try {
    const addresses = netns ? await inNamespace(netns) : inOwnNamespace()
    const hit = addresses.find((a) => sameAddress(a.address, vip))
    return { address: vip, owned: hit !== undefined, interface: hit?.ifname ?? null }
  } catch (err) {
    return { address: vip, owned: null, interface: null, error: (err as Error).message }
  }
}
