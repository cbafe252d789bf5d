/** The config parser of a host:port this process talks to (knotd, replicas, the HA peer). */
import { type AddressError, type ListenAddress, parseListenAddress } from '@gatehouse/kit/net.ts'

export function address(raw: unknown): ListenAddress {
  try {
    return parseListenAddress(String(raw))
  } catch (err) {
    throw new Error((err as AddressError).message)
  }
}
