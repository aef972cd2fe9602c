import * as z from 'zod'

/** One paid resource of the catalog listing (SPEC.md "Catalog listing of paid resources"). */
export const catalogResourceSchema = z.object({
  url: z.string(),
  name: z.string().describe('<owner>/<resource-slug>'),
  description: z.string(),
  paymentRequirements: z.object({
    scheme: z.string(),
    network: z.string().describe('x402 v1 name when the network has one (base, solana), else CAIP-2'),
    asset: z.string(),
    amount: z.string().describe('always "0" in the listing, as SPEC.md shows; prices are in /discovery/resources'),
  }),
  trustScore: z.object({
    successRate: z.number().min(0).max(100).nullable().describe('percent; null while there are fewer calls than the minimum'),
    sufficientData: z.boolean().describe('false when successRate would not mean anything yet'),
    calls: z.number().int().nonnegative(),
    valueProcessed: z.string().describe('"$" amount with k/M/B suffix'),
    lastCalled: z.string().describe('"never", "<n>m ago" (n >= 1), "<n>h ago", "<n>d ago" (under 30 days) or MM/DD/YYYY (UTC)'),
  }),
  jobsUrl: z.string(),
  avatarUrl: z.string().nullable(),
})

/** Body of the catalog listing. */
export const catalogListingSchema = z.object({
  success: z.boolean(),
  resources: z.array(catalogResourceSchema).describe('ordered by trustScore.calls, highest first'),
  cachedAt: z.string().describe('ISO time the listing was built'),
  ttlSeconds: z.number().int().nonnegative(),
})

/** One item of GET /discovery/resources, in the shape of the x402 bazaar. */
export const discoveryItemSchema = z.object({
  resource: z.string(),
  type: z.literal('http'),
  x402Version: z.number().int(),
  accepts: z.array(z.record(z.string(), z.unknown())),
  lastUpdated: z.string(),
  description: z.string().optional(),
  mimeType: z.string().optional(),
  serviceName: z.string().optional(),
  iconUrl: z.string().optional(),
  extensions: z.record(z.string(), z.unknown()).optional(),
  metadata: z.record(z.string(), z.unknown()),
})

/** Body of GET /discovery/resources (x402 bazaar list form). */
export const discoveryResponseSchema = z.object({
  x402Version: z.number().int(),
  items: z.array(discoveryItemSchema),
  pagination: z.object({ limit: z.number().int(), offset: z.number().int(), total: z.number().int() }),
})

const queryInt = (fallback: number, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a non-negative integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .optional()
    .transform((value) => value ?? fallback)

/** Query of GET /discovery/resources; untrusted, so parsed. */
export const discoveryQuerySchema = z.object({
  type: z.string().max(32).optional(),
  network: z.string().max(128).optional(),
  scheme: z.string().max(32).optional(),
  payTo: z.string().max(128).optional(),
  limit: queryInt(20, 1, 100),
  offset: queryInt(0, 0, 1_000_000),
})

export type CatalogResource = z.infer<typeof catalogResourceSchema>
export type CatalogListing = z.infer<typeof catalogListingSchema>
export type DiscoveryItem = z.infer<typeof discoveryItemSchema>
export type DiscoveryResponse = z.infer<typeof discoveryResponseSchema>
export type DiscoveryQuery = z.input<typeof discoveryQuerySchema>
