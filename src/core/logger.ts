/** The part of a pino logger the facilitator uses: `logger.warn({ fields }, 'message')`. */
export interface Logger {
  info(fields: Record<string, unknown>, message?: string): void
  warn(fields: Record<string, unknown>, message?: string): void
  error(fields: Record<string, unknown>, message?: string): void
}
