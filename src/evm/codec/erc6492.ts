import { parseErc6492Signature, type Address, type Hex } from 'viem'

/** An ERC-6492 envelope's factory, factory calldata and inner signature; `undefined` for any other signature. Shared by every EVM scheme. */
export function unwrapErc6492(signature: Hex): { factory: Address; data: Hex; signature: Hex } | undefined {
  try {
    const parsed = parseErc6492Signature(signature)
    if (parsed.address === undefined || parsed.data === undefined) return undefined
    return { factory: parsed.address, data: parsed.data, signature: parsed.signature }
  } catch {
    return undefined
  }
}
