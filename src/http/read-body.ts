import { FacilitatorError } from '../errors/facilitator-error.js'
import type { HttpCall } from './http-call.js'

/**
 * Reads a JSON body with its limits enforced before any parsing work: the
 * declared and the actual size, then the nesting depth (a cheap scan), so an
 * oversized or pathologically nested body costs almost nothing to refuse.
 */
export async function readJsonBody(call: Pick<HttpCall, 'header' | 'bytes'>, maxBytes: number, maxDepth: number): Promise<unknown> {
  const declared = call.header('content-length')
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes)
  const type = call.header('content-type')
  if (type !== null && type !== '' && !/^application\/(?:[\w.+-]*\+)?json\b/i.test(type) && !/^text\/plain\b/i.test(type)) {
    throw new FacilitatorError('unsupported_media_type', 'the body must be application/json')
  }
  const text = new TextDecoder('utf-8', { fatal: false }).decode(await call.bytes(maxBytes))
  if (exceedsDepth(text, maxDepth)) {
    throw new FacilitatorError('invalid_request', `the body is nested deeper than ${maxDepth} levels`)
  }
  try {
    return JSON.parse(text) as unknown
  } catch {
    // Told apart only here: a body JSON.parse takes is never blank.
    if (text.trim() === '') throw new FacilitatorError('invalid_json', 'the body is empty; send a JSON object')
    throw new FacilitatorError('invalid_json', 'the body is not valid JSON')
  }
}

/** Reads a web stream up to `maxBytes`, cancelling it past the limit. */
export async function readStreamBytes(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0)
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    // A hand-made stream may yield strings; undici's own bodies are bytes.
    if (!(value instanceof Uint8Array)) throw new TypeError('a body chunk is not a Uint8Array')
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined)
      throw tooLarge(maxBytes)
    }
    chunks.push(value)
  }
  return concatBytes(chunks, size)
}

/** Joins chunks into one array of `size` bytes. */
export function concatBytes(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1 && chunks[0]) return chunks[0]
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

/** Bracket depth outside strings; stops at the first level past the limit. */
export function exceedsDepth(text: string, maxDepth: number): boolean {
  // No more opening brackets than the limit, in strings or not, cannot nest past it: a payment body
  // has a dozen, found by a few native searches instead of a loop over every character.
  if (countUpTo(text, '{', maxDepth + 1) + countUpTo(text, '[', maxDepth + 1) <= maxDepth) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92 /* \ */) i++
      else if (c === 34 /* " */) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 || c === 91 /* { [ */) {
      if (++depth > maxDepth) return true
    } else if (c === 125 || c === 93 /* } ] */) depth--
  }
  return false
}

/** Occurrences of `char` in `text`, counting no further than `limit`. */
function countUpTo(text: string, char: string, limit: number): number {
  let count = 0
  for (let at = text.indexOf(char); at !== -1 && count < limit; at = text.indexOf(char, at + 1)) count++
  return count
}

export const tooLarge = (maxBytes: number) =>
  new FacilitatorError('payload_too_large', `the body exceeds the limit of ${maxBytes} bytes`)
