/** The resolve hook of hide-packages.mjs (module hooks run on a thread of their own). */
let hidden = new Set()

export function initialize(data) {
  hidden = new Set(data?.hidden ?? [])
}

export async function resolve(specifier, context, nextResolve) {
  if (hidden.has(specifier)) {
    const error = new Error(`Cannot find package '${specifier}' imported from ${context.parentURL ?? 'the command'}`)
    error.code = 'ERR_MODULE_NOT_FOUND'
    throw error
  }
  return nextResolve(specifier, context)
}
