/**
 * The shape of a public identifier (ids.ts), apart from its generator so the configuration
 * and the CLI's argument checks, which every `artsvc --help` loads, import no crypto.
 */
export const ID_PATTERN = '^[A-Za-z0-9_-]{16}$'
