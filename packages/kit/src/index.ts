export {
  type AppConfigOptions,
  CONFIG_DIR,
  type ConfigFile,
  configEnvName,
  configFileFor,
  loadAppConfig,
} from './cli/config-file.ts'
export { type Column, formatTable, paint, printList } from './cli/output.ts'
export {
  CliError,
  type CliOptions,
  createCli,
  packageVersion,
  type RunCliOptions,
  runCli,
  UsageError,
  withExamples,
} from './cli/program.ts'
export { addSchemaOptions, schemaFlags } from './cli/schema-options.ts'
export {
  ConfigError,
  type ConfigOf,
  describeSchema,
  type Field,
  type FieldOptions,
  field,
  type Loaded,
  type LoadOptions,
  loadConfig,
  loadWithChecks,
  type PartialLoad,
  type Schema,
} from './config.ts'
export { type BaseContext, type Clock, systemClock } from './context.ts'
export { bearerToken, readCookie } from './credentials.ts'
export { deleteBefore, firstIdFrom } from './db/batched-delete.ts'
export {
  type Database,
  type DatabaseKind,
  type DatabaseOptions,
  isUniqueViolation,
  type Migration,
  migrate,
  openDatabase,
  type PreparedQuery,
  parseDatabaseUrl,
  sql,
} from './db/database.ts'
export { type GroupCommitOptions, GroupCommitQueue } from './db/group-commit.ts'
export type { ListenHandlers, ListenSession } from './db/pg-listen.ts'
export { serverPrepared } from './db/pg-prepared.ts'
export { NodeSqliteDatabase } from './db/sqlite-adapter.ts'
export { isDatabaseUnavailable } from './db/unavailable.ts'
export { type OpenApiExtras, registerDocs, validationMessage } from './docs.ts'
export { DurationError, formatDuration, parseByteSize, parseDuration } from './durations.ts'
export {
  Decision,
  EDGE_LIMITS,
  EdgeWireError,
  FINGERPRINT_PATTERN,
  INSTANCE_ID_PATTERN,
  Observation,
  ObservationBatch,
  ObservationBatchResult,
  ObservationMetadata,
  PolicyResponse,
  readPolicyResponse,
  Sighting,
  Signal,
  SignalBatch,
  SignalBatchResult,
  SmtpReport,
  SmtpReportResult,
  Verdict,
} from './edge-wire.ts'
export {
  AppError,
  type AppErrorOptions,
  defineErrors,
  type ErrorDefinition,
  type ErrorFactory,
  kitErrors,
  RETRY_SOON,
  StartupError,
} from './errors.ts'
export { type HostGuardOptions, hostNameOf, installHostGuard, isAllowedHost } from './host-guard.ts'
export {
  createHttpApp,
  type FastAnswer,
  type FastPath,
  type FastPathOptions,
  type FastRequest,
  type FastWarm,
  type HttpApp,
  type HttpAppOptions,
  type Readiness,
  type ReadinessCheck,
} from './http.ts'
export { type ClientRequest, type ClientResponse, HttpClientError, requestNoRedirect } from './http-client.ts'
export { type NotFoundPage, type NotFoundPageFn, wantsHtml } from './http-errors.ts'
export { createLogger, fixedFieldLogger, type Logger, type LoggerConfig, requestIdFrom } from './logger.ts'
export { type AppMetrics, Counter, createMetrics, Gauge, Histogram, Registry } from './metrics.ts'
export {
  AddressError,
  type Cidr,
  CidrSet,
  cidrContains,
  type IpAddress,
  isIp,
  isLoopback,
  isPublicIp,
  type ListenAddress,
  normalizeIp,
  parseCidr,
  parseIp,
  parseListenAddress,
} from './net.ts'
export { type PeriodicJob, type PeriodicOptions, periodic } from './periodic.ts'
export { mkdirPrivate, mkdirPrivateSync, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './private-files.ts'
export { exitWithError, type RunOptions, runMain, type Stop } from './process.ts'
export { RepeatedFailure, type RepeatedFailureOptions } from './repeated-failure.ts'
export { generateToken, hashToken, safeEqual, sha256Hex, verifyToken } from './secrets.ts'
export type { StackContext, StackService, StartStack } from './stack.ts'
export {
  ensurePortFree,
  ensureUdpPortFree,
  StackError,
  type SupervisedChild,
  shownPath,
  supervise,
  type WaitHttpOptions,
  waitHttp,
  waitSshBanner,
} from './stack-ready.ts'
export { escapeTerminal, hasControlCharacter, terminalJson } from './terminal.ts'
export { findNul, installNulGuard, refuseNul } from './text-guard.ts'
export {
  formatTimestampMicros,
  formatTimestampMillis,
  parseTimestampMicros,
  parseTimestampMillis,
  TIMESTAMP_PATTERN,
} from './timestamps.ts'
export {
  type ClientTlsConfig,
  createTlsAgent,
  type HttpsServerConfig,
  httpsServerOptions,
  loadTlsMaterial,
  type TlsFiles,
  type TlsMaterial,
} from './tls.ts'
