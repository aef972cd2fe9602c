/** The paywall's batch-settlement offers: how they are configured, resolved and challenged (no chain needed). */
import { describe, expect, it } from 'vitest'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createFacilitator } from '../../src/facilitator/facilitator.js'
import { batchSettlementEvm } from '../../src/evm/batch/index.js'
import { createBatchSettlementServer } from '../../src/resource-server/batch/index.js'
import { createPaywall, PAYMENT_HEADERS, type PaymentOffer } from '../../src/resource-server/index.js'

const gas = privateKeyToAccount(generatePrivateKey())
const delegated = privateKeyToAccount(generatePrivateKey())
const facilitatorWith = (receiverAuthorizer?: typeof delegated) =>
  createFacilitator({ schemes: [batchSettlementEvm({ networks: [{ network: 'eip155:84532', rpcUrls: ['http://127.0.0.1:9'] }], signers: [gas], ...(receiverAuthorizer ? { receiverAuthorizer } : {}) })] })
const offer: PaymentOffer = { scheme: 'batch-settlement', network: 'eip155:84532', amount: '1000', asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', payTo: '0x2222222222222222222222222222222222222222', extra: { name: 'USDC', version: '2' } }
const challengeOf = (response: Response) => JSON.parse(atob(response.headers.get(PAYMENT_HEADERS.v2Required)!)) as { accepts: PaymentOffer[] }

describe('batch-settlement offers in the paywall', () => {
  it('needs a batch-settlement server to keep its channels', () => {
    expect(() => createPaywall({ facilitator: facilitatorWith(delegated), offers: [offer] })).toThrow(expect.objectContaining({ code: 'misconfigured', message: expect.stringMatching(/batchSettlement: createBatchSettlementServer/) }))
  })

  it('refuses a claim policy slower than the withdraw delay allows', () => {
    const facilitator = facilitatorWith(delegated)
    expect(() => createBatchSettlementServer({ facilitator, claimPolicy: { everySeconds: 800 } })).toThrow(expect.objectContaining({ code: 'misconfigured', message: expect.stringMatching(/lease \(120 s\) must stay below the withdraw delay \(900 s\)/) }))
    expect(() => createBatchSettlementServer({ facilitator, withdrawDelay: 3600, claimPolicy: { everySeconds: 900 } })).not.toThrow()
  })

  it('names the facilitator\'s receiver authorizer and the withdraw delay in the challenge, v2 only', async () => {
    const facilitator = facilitatorWith(delegated)
    const batch = createBatchSettlementServer({ facilitator, claimPolicy: false, withdrawDelay: 1800 })
    const response = await createPaywall({ facilitator, batchSettlement: batch, offers: [offer] })(new Request('http://shop.test/x'), async () => Response.json({}))
    expect(response.status).toBe(402)
    expect(challengeOf(response).accepts[0]!.extra).toEqual({ name: 'USDC', version: '2', receiverAuthorizer: delegated.address, withdrawDelay: 1800 })
    expect(((await response.json()) as { accepts: unknown[] }).accepts).toEqual([])
  })

  it('names the server\'s own receiver authorizer without asking the facilitator', async () => {
    const own = privateKeyToAccount(generatePrivateKey())
    const facilitator = facilitatorWith()
    const batch = createBatchSettlementServer({ facilitator, claimPolicy: false, receiverAuthorizer: own })
    const response = await createPaywall({ facilitator: { verify: facilitator.verify, settle: facilitator.settle }, batchSettlement: batch, offers: [offer] })(new Request('http://shop.test/x'), async () => Response.json({}))
    expect(challengeOf(response).accepts[0]!.extra).toMatchObject({ receiverAuthorizer: own.address, withdrawDelay: 900 })
  })

  it('answers 500 misconfigured, the work never run, when no receiver authorizer is known', async () => {
    const facilitator = facilitatorWith()
    const batch = createBatchSettlementServer({ facilitator, claimPolicy: false })
    let ran = false
    const response = await createPaywall({ facilitator, batchSettlement: batch, offers: [offer] })(new Request('http://shop.test/x'), async () => {
      ran = true
      return Response.json({})
    })
    expect(response.status).toBe(500)
    expect(await response.json()).toMatchObject({ code: 'misconfigured', error: expect.stringMatching(/has no receiverAuthorizer/) })
    expect(ran).toBe(false)
  })
})
