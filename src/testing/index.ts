export { adapterConformance, type ConformanceCheck, type ConformanceSetup } from './adapter-conformance.js'
