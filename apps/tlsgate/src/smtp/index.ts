/** SMTP routes: the STARTTLS dialogue (dialogue.ts) and the hourly correlation reports (reports.ts). */
export { handleSmtpClient } from './dialogue.ts'
export { hourStart, MAX_EVIDENCE, replayId, type SmtpReportBody, SmtpReporter } from './reports.ts'
