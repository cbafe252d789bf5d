/**
 * TLS constants the gate reads before any encryption (RFC 8446 §5.1 record layer, §4.1.2
 * ClientHello, §4.2 extensions; RFC 5246 for TLS 1.2 and older). Nothing here is negotiated:
 * the gate only reads the client's first flight and forwards it untouched.
 */

/**
 * TLSPlaintext record header, 5 bytes:
 *   ContentType type (1) | ProtocolVersion legacy_record_version (2) | uint16 length
 */
export const RECORD_HEADER = 5
/** ContentType handshake(22). Anything else before the ClientHello is not a TLS client. */
export const CONTENT_HANDSHAKE = 0x16
/** A plaintext record carries at most 2^14 bytes (RFC 8446 §5.1). */
export const MAX_RECORD = 16_384

/**
 * Handshake header, 4 bytes: HandshakeType msg_type (1) | uint24 length. The ClientHello may be
 * split over several records (and TCP segments); the gate reassembles it up to MAX_HELLO.
 */
export const HANDSHAKE_HEADER = 4
/** HandshakeType client_hello(1). */
export const HANDSHAKE_CLIENT_HELLO = 1
/**
 * Our cap on the ClientHello body: real ones are 200 B to 2 KB (about 1.8 KB with a
 * post-quantum key share); 32 KiB leaves room for large PSK tickets and matches the SSH gate's
 * initial-packet limit. Larger is refused before it is buffered.
 */
export const MAX_HELLO = 32 * 1024
/**
 * Our cap on the records one ClientHello may be spread over. Clients send one (two for a hello
 * above 16 KiB); tools that split the hello to get past middleboxes use a handful, or a few
 * hundred tiny ones at most. Each record costs a header and, when it arrives on its own, a copy
 * of what was gathered so far: the cap keeps a hostile 1-byte-record hello from costing
 * seconds of CPU.
 */
export const MAX_HELLO_RECORDS = 512

/** Extension types the fingerprints read (IANA "TLS ExtensionType Values"). */
export const EXT = {
  serverName: 0x0000,
  supportedGroups: 0x000a,
  ecPointFormats: 0x000b,
  signatureAlgorithms: 0x000d,
  alpn: 0x0010,
  supportedVersions: 0x002b,
} as const

/**
 * GREASE values (RFC 8701): 0x0a0a, 0x1a1a, ... 0xfafa. Clients sprinkle them into every list
 * to keep servers tolerant; both fingerprints ignore them.
 */
export function isGrease(value: number): boolean {
  return (value & 0x0f0f) === 0x0a0a && value >> 8 === (value & 0xff)
}

/** JA4's two-character TLS version (FoxIO JA4.md, "TLS Version"). */
export const JA4_VERSIONS: Record<number, string> = {
  772: '13',
  771: '12',
  770: '11',
  769: '10',
  768: 's3',
  2: 's2',
  65279: 'd1',
  65277: 'd2',
  65276: 'd3',
}
