/**
 * The identifier formats as plain patterns, for code that must stay light (the configuration,
 * which `notify --help` loads); names.ts builds the wire schemas from them.
 */

/** A channel's URL-safe, immutable name; also its id in paths. */
export const CHANNEL_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/

/** A reader's username. */
export const USERNAME = /^[a-z0-9][a-z0-9._-]{0,63}$/
