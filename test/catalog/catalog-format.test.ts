import { describe, expect, it } from 'vitest'
import { formatLastCalled, formatUsdCompact } from '../../src/catalog/catalog-format.js'
import { isSafeRouteTemplate, resourceId, resourceName } from '../../src/catalog/resource-name.js'

describe('catalog formats', () => {
  it.each([
    [0, '$0'],
    [-3, '$0'],
    [0.001, '$0.001'],
    [0.25, '$0.25'],
    [0.5, '$0.50'],
    [0.00001, '$0'],
    [1, '$1'],
    [12.5, '$12.50'],
    [999.99, '$999.99'],
    [999.996, '$1k'],
    [1000, '$1k'],
    [1234, '$1.2k'],
    [45_678, '$45.7k'],
    [999_960, '$1M'],
    [3_456_789, '$3.5M'],
    [7_200_000_000, '$7.2B'],
  ])('valueProcessed of %d is %s', (usd, text) => {
    expect(formatUsdCompact(usd)).toBe(text)
  })

  it('writes lastCalled as never, a relative age, or a month/day/year date', () => {
    const now = Date.UTC(2026, 10, 20, 12)
    expect(formatLastCalled(undefined, now)).toBe('never')
    // Under a minute reads 1m ago, not 0m ago; a timestamp a little in the future (clock skew) too.
    expect(formatLastCalled(now, now)).toBe('1m ago')
    expect(formatLastCalled(now - 30_000, now)).toBe('1m ago')
    expect(formatLastCalled(now + 5_000, now)).toBe('1m ago')
    expect(formatLastCalled(now - 60_000, now)).toBe('1m ago')
    expect(formatLastCalled(now - 119_000, now)).toBe('1m ago')
    expect(formatLastCalled(now - 59 * 60_000, now)).toBe('59m ago')
    expect(formatLastCalled(now - 60 * 60_000, now)).toBe('1h ago')
    expect(formatLastCalled(now - 30 * 86_400_000, now)).toMatch(/^\d{2}\/\d{2}\/\d{4}$/)
    expect(formatLastCalled(now - 5 * 60_000, now)).toBe('5m ago')
    expect(formatLastCalled(now - 7 * 3_600_000, now)).toBe('7h ago')
    expect(formatLastCalled(now - 3 * 86_400_000, now)).toBe('3d ago')
    expect(formatLastCalled(now - 29 * 86_400_000, now)).toBe('29d ago')
    expect(formatLastCalled(Date.UTC(2026, 1, 11, 9), now)).toBe('02/11/2026')
  })
})

describe('resource identity and names', () => {
  it('normalises URLs and refuses what is not plain http(s)', () => {
    expect(resourceId('https://api.example.com/weather?city=Oslo#x')).toBe('https://api.example.com/weather')
    expect(resourceId('https://api.example.com/')).toBe('https://api.example.com')
    expect(resourceId('https://api.example.com/users/42', '/users/:id')).toBe('https://api.example.com/users/:id')
    expect(resourceId('javascript:alert(1)')).toBeUndefined()
    expect(resourceId('https://user:pw@example.com/x')).toBeUndefined()
    expect(resourceId('not a url')).toBeUndefined()
    expect(resourceId(`https://example.com/${'a'.repeat(3000)}`)).toBeUndefined()
  })

  it('ignores route templates that could file a payment under another URL', () => {
    for (const bad of ['users/:id', '/../admin', '/%2e%2e/admin', '/%252e%252e/x', '/x/https://evil.example', '/a b']) {
      expect(isSafeRouteTemplate(bad)).toBe(false)
    }
    expect(resourceId('https://api.example.com/users/42', '/%2e%2e/admin')).toBe('https://api.example.com/users/42')
  })

  it('names resources <owner>/<resource-slug>', () => {
    expect(resourceName('https://api.weather-co.com/v1/forecast/daily')).toBe('weather-co/forecast-daily')
    expect(resourceName('https://example.com')).toBe('example/root')
    expect(resourceName('https://shop.example.co.uk/api/Items_List')).toBe('example/items-list')
    expect(resourceName('https://api.example.com/users/:id')).toBe('example/users-id')
    expect(resourceName('http://127.0.0.1:4021/paid')).toBe('127-0-0-1/paid')
    expect(resourceName('https://x.example.com/a', 'Acme Data!')).toBe('acme-data/a')
  })
})
