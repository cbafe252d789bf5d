export { createTestCa, type IssuedCert, type IssueOptions, type TestCa } from './ca.ts'
export { type Child, type StartOptions, startChild } from './child.ts'
export { type Browser, type BrowserContext, CHROMIUM_FLAGS, launchChromium, type Page } from './chromium.ts'
export { killQuietly, onExit, removeQuietly } from './cleanup.ts'
export { unreadableText } from './contrast.ts'
export { type DnsAnswer, dnsQuery, soaSerial } from './dns.ts'
export { EDGEGATE_MAIN, startTestEdgegate, type TestEdgegate, type TestEdgegateOptions } from './edgegate.ts'
export { freePort, isRoot, MissingBinaryError, requireBinary, type TempDir, tempDir, userIds } from './env.ts'
export { type FailingDisk, mountFailingDisk } from './failing-disk.ts'
export { type Knot, type KnotOptions, knotConfig, startKnot } from './knot.ts'
export { EMPTY_RPZ, type Kresd, type KresdInstance, type KresdOptions, kresdConfig, startKresd } from './kresd.ts'
export {
  buildHttpRequest,
  type HttpLoadOptions,
  type HttpLoadResult,
  type HttpRequestSpec,
  httpLoad,
  loopStallDuring,
  type MachineSpent,
  machineCpuDuring,
  processCpu,
  relayBoundLine,
} from './load.ts'
export { loadedPackages } from './loaded-packages.ts'
export { metric } from './metrics-text.ts'
export { type Nginx, type NginxOptions, startNginx } from './nginx.ts'
export { type AccessTokenOptions, type OidcProvider, type OidcProviderOptions, startOidcProvider } from './oidc.ts'
export { type Postgres, startPostgres } from './postgres.ts'
export { type Prometheus, type PrometheusOptions, type PrometheusSample, startPrometheus } from './prometheus.ts'
export {
  type BrowserSubscription,
  decryptAes128gcm,
  type PushServiceDouble,
  type ReceivedPush,
  startPushService,
} from './push-service.ts'
export { type Redis, startRedis } from './redis.ts'
export { type S3Server, startS3 } from './s3.ts'
export { mountSmallDisk, postgresDatabaseOn, type SmallDisk } from './small-disk.ts'
export {
  type ClientKey,
  dropbearClient,
  generateClientKey,
  readIdentification,
  type SshClientOptions,
  type Sshd,
  type SshdOptions,
  type SshResult,
  sshArgs,
  sshClient,
  sshVersion,
  startSshd,
} from './ssh.ts'
export { type StackHarness, stackHarness } from './stack-harness.ts'
export { startTcpRelay, type TcpRelay } from './tcp-relay.ts'
export { waitFor } from './wait.ts'
