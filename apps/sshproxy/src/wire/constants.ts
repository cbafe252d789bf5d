/**
 * SSH transport constants the gate needs before encryption starts (RFC 4253, RFC 4251).
 * Each is commented with the wire layout it bounds and the section that defines it.
 */

/**
 * RFC 4253 §4.2: the identification string is `SSH-protoversion-softwareversion SP comments CR LF`
 * and "the maximum length of the string is 255 characters, including the Carriage Return and
 * Line Feed". We also accept a bare LF ending, as OpenSSH does.
 */
export const MAX_IDENTIFICATION_LINE = 255

/** RFC 4253 §4.2: the only protocol version a client may announce to an SSH-2 server. */
export const IDENTIFICATION_PREFIX = 'SSH-2.0-'

/**
 * RFC 4253 §6: `uint32 packet_length`, `byte padding_length`, `byte[n1] payload`,
 * `byte[n2] random padding`, `byte[m] mac`. Before key exchange there is no MAC (m = 0).
 */
export const PACKET_LENGTH_FIELD = 4
export const PADDING_LENGTH_FIELD = 1

/**
 * The spec's limit on the client's initial packet: 32 KiB for the whole packet, length field
 * included (RFC 4253 §6.1 only requires 35000-byte packets to be accepted; KEXINITs of real
 * clients are about 1.5 KB).
 */
export const MAX_INITIAL_PACKET = 32 * 1024

/** RFC 4253 §6: "There MUST be at least four bytes of padding." (and at most 255, one byte). */
export const MIN_PADDING = 4

/**
 * RFC 4253 §6: the length of `packet_length || padding_length || payload || padding` must be a
 * multiple of the cipher block size or 8, whichever is larger; before key exchange that is 8.
 */
export const UNENCRYPTED_BLOCK = 8

/** RFC 4253 §12 (message numbers): SSH_MSG_KEXINIT. */
export const SSH_MSG_KEXINIT = 20

/** RFC 4253 §7.1: `byte[16] cookie (random bytes)` right after the message number. */
export const KEXINIT_COOKIE_LENGTH = 16

/**
 * RFC 4253 §7.1: the ten `name-list`s of SSH_MSG_KEXINIT, in wire order. A name-list
 * (RFC 4251 §5) is `uint32 length` followed by that many bytes of comma-separated names.
 * They are followed by `boolean first_kex_packet_follows` and `uint32 0 (reserved)`.
 */
export const KEXINIT_NAME_LISTS = [
  'kex_algorithms',
  'server_host_key_algorithms',
  'encryption_algorithms_client_to_server',
  'encryption_algorithms_server_to_client',
  'mac_algorithms_client_to_server',
  'mac_algorithms_server_to_client',
  'compression_algorithms_client_to_server',
  'compression_algorithms_server_to_client',
  'languages_client_to_server',
  'languages_server_to_client',
] as const

export type NameListField = (typeof KEXINIT_NAME_LISTS)[number]

/** RFC 4251 §5: `boolean` is one byte; 0 is FALSE and any non-zero value is TRUE. */
export const BOOLEAN_FIELD = 1

/** RFC 4253 §7.1: the trailing `uint32 0 (reserved for future extension)`. */
export const RESERVED_FIELD = 4

/** Smallest KEXINIT payload: message number, cookie, ten empty name-lists, boolean, reserved. */
export const MIN_KEXINIT_PAYLOAD =
  1 + KEXINIT_COOKIE_LENGTH + KEXINIT_NAME_LISTS.length * 4 + BOOLEAN_FIELD + RESERVED_FIELD
