/**
 * The single error type of the DNS model. `code` is a stable UPPER_SNAKE identifier that callers may
 * switch on; `message` says what is wrong and how to fix it.
 */
export class DnsError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DnsError';
    this.code = code;
  }
}
