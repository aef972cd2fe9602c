import { FacilitatorError } from '../errors/facilitator-error.js'

/**
 * Reads a JSON body with its limits enforced before any parsing work: the
 * declared and the actual size, then the nesting depth (a cheap scan), so an
 * oversized or pathologically nested body costs almost nothing to refuse.
 */
export async function readJsonBody(request: Request, maxBytes: number, maxDepth: number): Promise<unknown> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes)
  const type = request.headers.get('content-type')
  if (type !== null && type !== '' && !/^application\/(?:[\w.+-]*\+)?json\b/i.test(type) && !/^text\/plain\b/i.test(type)) {
    throw new FacilitatorError('unsupported_media_type', 'the body must be application/json')
  }
  const text = await readText(request, maxBytes)
  if (text.trim() === '') throw new FacilitatorError('invalid_json', 'the body is empty; send a JSON object')
  if (exceedsDepth(text, maxDepth)) {
    throw new FacilitatorError('invalid_request', `the body is nested deeper than ${maxDepth} levels`)
  }
  try {
    return JSON.parse(text) as unknown
  } catch {
    throw new FacilitatorError('invalid_json', 'the body is not valid JSON')
  }
}

async function readText(request: Request, maxBytes: number): Promise<string> {
  if (!request.body) return ''
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined)
      throw tooLarge(maxBytes)
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes)
}

/** Bracket depth outside strings; stops at the first level past the limit. */
export function exceedsDepth(text: string, maxDepth: number): boolean {
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

const tooLarge = (maxBytes: number) =>
  new FacilitatorError('payload_too_large', `the body exceeds the limit of ${maxBytes} bytes`)
