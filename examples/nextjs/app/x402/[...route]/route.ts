// app/x402/[...route]/route.ts: serves /x402/supported, /x402/verify and /x402/settle.
import { handler } from '../../../facilitator.js'

export const GET = handler
export const POST = handler
export const OPTIONS = handler
