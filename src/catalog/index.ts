// The catalog entry (`x402-facilitator/catalog`): the paid resources seen, their trust scores and the discovery form.
export {
  CATALOG_LISTING_PATH,
  createCatalog,
  DISCOVERY_PATH,
  type CatalogEntry,
  type CatalogOptions,
  type CatalogResourceConfig,
  type CatalogService,
  type CatalogSnapshot,
} from './catalog.js'
export {
  catalogListingSchema,
  catalogResourceSchema,
  discoveryItemSchema,
  discoveryQuerySchema,
  discoveryResponseSchema,
  type CatalogListing,
  type CatalogResource,
  type DiscoveryItem,
  type DiscoveryQuery,
  type DiscoveryResponse,
} from './catalog-schema.js'
