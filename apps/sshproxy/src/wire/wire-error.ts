/** Why a client's pre-encryption bytes were refused; `code` is stable and logged, never sent. */
export type WireErrorCode =
  | 'identification_too_long'
  | 'identification_invalid'
  | 'protocol_version_unsupported'
  | 'packet_too_large'
  | 'packet_length_invalid'
  | 'padding_invalid'
  | 'not_kexinit'
  | 'kexinit_malformed'
  | 'name_list_invalid'

export class WireError extends Error {
  override readonly name = 'WireError'
  readonly code: WireErrorCode
  constructor(code: WireErrorCode, message: string) {
    super(message)
    this.code = code
  }
}
