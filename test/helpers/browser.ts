import { Browser, chromium as playwright, Page } from 'playwright-core';

/**
 * A headless Chromium for browser tests: the binary shipped inside @sparticuz/chromium (unpacked to a
 * temporary folder on first use, no download), driven by playwright-core.
 */
export async function launchBrowser(): Promise<Browser> {
  // An ES module: loaded with import(), which this CommonJS file keeps as a real dynamic import.
  const chromium = (await import('@sparticuz/chromium')).default;
  const executablePath = await chromium.executablePath();
  // An explicit UI language: with LANG=C Chromium reports navigator.language "en-US@posix", which Intl refuses.
  return playwright.launch({ executablePath, args: [...chromium.args, '--lang=en-US'], headless: true });
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: unknown[]; html: string; failureSummary?: string }>;
}

/** Runs axe-core on the page as it is now; answers its violations (every impact). */
export async function axeViolations(page: Page): Promise<AxeViolation[]> {
  const loaded = await page.evaluate<boolean>(`typeof window.axe === 'object'`);
  // Needs a context with bypassCSP: the console's content security policy refuses injected scripts.
  if (!loaded) await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
  // A string, evaluated in the page: this file is compiled without the DOM types.
  return page.evaluate<AxeViolation[]>(`axe.run(document, { resultTypes: ['violations'] }).then((result) =>
    result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target, html: n.html, failureSummary: n.failureSummary })) })))`);
}
