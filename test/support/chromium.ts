/**
 * Headless Chromium from Debian (`apt-get install -y chromium`), driven by
 * playwright-core, which never downloads a browser of its own here. Each launch
 * gets a fresh profile directory, removed on close; the background-networking
 * flags keep Chromium from calling home on a closed network.
 *
 * @example
 * const browser = await launchChromium()
 * const page = await browser.context.newPage()
 * await page.goto(url)
 * await browser.close()
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'

/** Where Debian's package puts the browser; CHROMIUM_PATH overrides it. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export interface LaunchedChromium {
  readonly context: BrowserContext
  close(): Promise<void>
}

export async function launchChromium(): Promise<LaunchedChromium> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH}: apt-get install -y chromium (or set CHROMIUM_PATH)`)
  const profile = mkdtempSync(join(tmpdir(), 'x402-chromium-'))
  try {
    // A persistent context is how playwright takes a profile directory of our choosing (--user-data-dir).
    const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM_PATH, headless: true, args: FLAGS })
    return {
      context,
      async close() {
        await context.close().catch(() => undefined)
        rmSync(profile, { recursive: true, force: true })
      },
    }
  } catch (error) {
    rmSync(profile, { recursive: true, force: true })
    throw error
  }
}
