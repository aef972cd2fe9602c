import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createNodeListener } from '../../src/http/index.js'
import { supportedResponseSchema } from '../../src/index.js'
import { startAnvil, type AnvilNode } from '../support/anvil.js'

// Next.js calls a route module's exported method handlers with a Request; this
// test does the same behind a real HTTP server, against a real anvil node.
let node: AnvilNode
let server: Server
let url: string
let signer: string

beforeAll(async () => {
  node = await startAnvil({ chainId: 84532 })
  const key = generatePrivateKey()
  signer = privateKeyToAccount(key).address
  process.env.X402_EVM_RPC_URLS = node.rpcUrl
  process.env.X402_EVM_PRIVATE_KEY = key
  const route = (await import('../../examples/nextjs/app/x402/[...route]/route.js')) as Record<string, (r: Request) => Promise<Response>>
  server = createServer(
    createNodeListener(async (request) => {
      const method = route[request.method]
      return method ? method(request) : new Response(null, { status: 405 })
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()))
  await node?.stop()
})

describe('Next.js route handler example', () => {
  it('serves /x402/supported with the configured network and signer', async () => {
    const response = await fetch(`${url}/x402/supported`)
    expect(response.status).toBe(200)
    const body = supportedResponseSchema.parse(await response.json())
    expect(body.kinds.map((k) => `${k.x402Version}:${k.network}`)).toEqual(['1:base-sepolia', '2:eip155:84532'])
    expect(body.signers['eip155:*']).toEqual([signer])
  })

  it('answers a malformed verify with 400 {error, code}', async () => {
    const response = await fetch(`${url}/x402/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ code: 'invalid_request' })
  })
})
