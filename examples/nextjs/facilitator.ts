// The facilitator of a Next.js app, configured from the environment and shared by its routes.
import { privateKeyToAccount } from 'viem/accounts'
import { createFacilitator } from 'x402-facilitator'
import { exactEvm } from 'x402-facilitator/evm'
import { createHandler } from 'x402-facilitator/http'

function required(name: string): string {
  const value = process.env[name]
  if (!value) throw new Error(`set ${name} (see examples/nextjs/README.md)`)
  return value
}

export const facilitator = createFacilitator({
  schemes: [
    exactEvm({
      networks: [{ network: process.env.X402_EVM_NETWORK ?? 'base-sepolia', rpcUrls: required('X402_EVM_RPC_URLS').split(',') }],
      signers: [privateKeyToAccount(required('X402_EVM_PRIVATE_KEY') as `0x${string}`)],
    }),
  ],
})

export const handler = createHandler(facilitator, { basePath: '/x402' })
