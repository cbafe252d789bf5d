/** The version reported by `--version` and `sshproxy_build_info`. */
export const VERSION = '0.1.0'
