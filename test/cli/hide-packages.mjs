/**
 * Fault injection for the CLI tests: `node --import tsx --import ./test/cli/hide-packages.mjs`
 * makes the packages named in X402_TEST_HIDE_PACKAGES (comma-separated) fail to resolve
 * exactly as an uninstalled package does (ERR_MODULE_NOT_FOUND, "Cannot find package"), as
 * in a project where they were never installed.
 */
import { register } from 'node:module'

register('./hide-packages-hooks.mjs', import.meta.url, { data: { hidden: (process.env.X402_TEST_HIDE_PACKAGES ?? '').split(',').filter(Boolean) } })
