/**
 * Where an action callback may go (spec Part B, Errors 5): never to a loopback, private,
 * link-local, unique-local or otherwise non-public address unless its target explicitly
 * allows private destinations. IPv4-mapped IPv6 literals (`[::ffff:127.0.0.1]`) are judged as
 * the IPv4 address they carry. A host name is resolved once per call; every address it
 * resolves to must pass (a name that answers one public and one loopback address is
 * refused), and the connection is then pinned to the checked address (see dispatch.ts), so
 * a DNS answer that changes between the check and the connect (rebinding) is never used.
 */
import type { LookupAddress } from 'node:dns'
import { lookup } from 'node:dns/promises'
import { isPublicIp, parseIp } from '@gatehouse/kit/net.ts'

export class DestinationError extends Error {
  override readonly name = 'DestinationError'
}

export interface Address {
  address: string
  family: 4 | 6
}

export interface Destination {
  url: URL
  /** The checked addresses the connection must use (the first is preferred). */
  addresses: Address[]
}

/** The host of a URL without IPv6 brackets. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '')
}

/** An IP literal host, normalised (mapped IPv6 becomes IPv4), or undefined for a name. */
export function literalAddress(url: URL): Address | undefined {
  const host = bareHost(url)
  try {
    const ip = parseIp(host)
    return { address: ip.toString(), family: ip.kind() === 'ipv4' ? 4 : 6 }
  } catch {
    return undefined
  }
}

function refuseUnlessAllowed(address: string, allowPrivate: boolean, host: string): void {
  if (allowPrivate) return
  if (!isPublicIp(address)) {
    throw new DestinationError(
      `destination ${host} is a loopback, private or link-local address (${address}); the target does not allow private destinations`,
    )
  }
}

/** Check a callback URL at dispatch time and choose the address to connect to. */
export async function resolveDestination(
  url: URL,
  allowPrivate: boolean,
  resolve: (host: string) => Promise<LookupAddress[]> = (host) => lookup(host, { all: true, verbatim: true }),
): Promise<Destination> {
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    throw new DestinationError(`destination scheme ${url.protocol} is refused (https only)`)
  }
  const literal = literalAddress(url)
  if (literal) {
    refuseUnlessAllowed(literal.address, allowPrivate, url.host)
    return { url, addresses: [literal] }
  }
  let answers: LookupAddress[]
  try {
    answers = await resolve(bareHost(url))
  } catch (err) {
    throw new DestinationError(`cannot resolve ${url.hostname}: ${(err as Error).message}`)
  }
  if (answers.length === 0) throw new DestinationError(`${url.hostname} has no address`)
  const checked = answers.map((a): Address => {
    const ip = parseIp(a.address)
    return { address: ip.toString(), family: ip.kind() === 'ipv4' ? 4 : 6 }
  })
  for (const a of checked) refuseUnlessAllowed(a.address, allowPrivate, url.hostname)
  return { url, addresses: checked }
}

/** Registration-time check: a literal address is judged at once, a name at each call. */
export function checkTargetUrl(text: string, allowPrivate: boolean): URL {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new DestinationError('url is not an absolute URL')
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowPrivate)) {
    throw new DestinationError('url must be https (http only with allow_private: true)')
  }
  if (url.username || url.password) throw new DestinationError('url must not carry credentials; use credential')
  if (url.hash) throw new DestinationError('url must not have a fragment')
  const literal = literalAddress(url)
  if (literal) refuseUnlessAllowed(literal.address, allowPrivate, url.host)
  return url
}
