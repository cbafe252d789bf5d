/**
 * The SMTP server the benchmark's STARTTLS section talks to, in its own process (so its CPU is
 * not the load generator's): greets, answers EHLO with STARTTLS, upgrades with node:tls on
 * STARTTLS, answers EHLO and QUIT inside TLS. Listens on 127.0.0.1:$SMTP_PORT with the PEM
 * files $SMTP_CERT and $SMTP_KEY; prints `smtp backend ready` when listening.
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { createSecureContext, TLSSocket } from 'node:tls'

const context = createSecureContext({
  cert: readFileSync(process.env.SMTP_CERT ?? ''),
  key: readFileSync(process.env.SMTP_KEY ?? ''),
})

const server = createServer((plain) => {
  plain.on('error', () => {})
  plain.write('220 mail.example.test ESMTP bench\r\n')
  let buffer = ''
  const onPlain = (d: Buffer) => {
    buffer += d.toString('latin1')
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      const line = buffer.slice(0, i).trim().toUpperCase()
      buffer = buffer.slice(i + 1)
      if (line.startsWith('EHLO')) plain.write('250-mail.example.test\r\n250 STARTTLS\r\n')
      else if (line === 'STARTTLS') {
        plain.off('data', onPlain)
        plain.write('220 2.0.0 ready to start TLS\r\n')
        const tls = new TLSSocket(plain, { isServer: true, secureContext: context })
        tls.on('error', () => {})
        tls.on('data', (x: Buffer) => {
          const text = x.toString('latin1').toUpperCase()
          if (text.includes('EHLO')) tls.write('250 mail.example.test\r\n')
          if (text.includes('QUIT')) tls.end('221 2.0.0 bye\r\n')
        })
        return
      } else if (line === 'QUIT') plain.end('221 bye\r\n')
      else plain.write('502 5.5.2 not implemented\r\n')
    }
  }
  plain.on('data', onPlain)
})
server.listen(Number(process.env.SMTP_PORT), '127.0.0.1', () => process.stdout.write('smtp backend ready\n'))
process.on('SIGTERM', () => {
  server.close()
  process.exit(0)
})
