import pino, { type Logger } from 'pino';

export type { Logger };

/** Paths that may hold secrets anywhere a logger is handed an object. */
const redact = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'apiKey',
  '*.apiKey',
  'api_key',
  '*.api_key',
  'passphrase',
  '*.passphrase',
  'privateKey',
  '*.privateKey',
  'private_key',
  '*.private_key',
  'signingKey',
  '*.signingKey',
  'signing_key',
  '*.signing_key',
  'secret',
  '*.secret',
];

export function createLogger(level: string = 'info', destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: redact, censor: '[redacted]' }, base: { service: 'relayer' } }, destination);
}
