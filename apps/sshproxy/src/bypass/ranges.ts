/** The trusted-range bypass is the kit's (packages/kit/src/gate-bypass.ts), shared with tlsgate. */
export {
  BypassRanges,
  canonicalRanges,
  loadManagedRanges,
  replaceManagedRanges,
  storeManagedRanges,
} from '@gatehouse/kit/gate-bypass.ts'
