/**
 * The dashboard's one HTML page: public/index.html with the import map and what the page connects to
 * filled in, and the Content-Security-Policy that lets it run nothing but its own files. It carries no
 * secret: `leasehold dashboard` admits its browser by a cookie (dashboard-session.ts).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** Where the page's own files live; API routes never start with it. */
export const ASSET_PREFIX = '/_dashboard/';

/** The import map: bare specifiers the page's modules import -> the URLs dashboard-assets.ts serves them at. */
export const VENDOR_MODULES: Record<string, string> = {
  preact: `${ASSET_PREFIX}vendor/preact.mjs`,
  'preact/hooks': `${ASSET_PREFIX}vendor/preact-hooks.mjs`,
  htm: `${ASSET_PREFIX}vendor/htm.mjs`,
};

export interface DashboardPageOptions {
  /** What the page says it is connected to, e.g. "this local stack" or the deployed API's URL. */
  apiLabel: string;
}

const TEMPLATE_URL = new URL('./public/index.html', import.meta.url);
let template: string | undefined;

export function dashboardPage(options: DashboardPageOptions): {
  html: string;
  contentSecurityPolicy: string;
} {
  template ??= readFileSync(TEMPLATE_URL, 'utf8');
  const importMap = JSON.stringify({ imports: VENDOR_MODULES });
  // Replacer functions, not strings: a replacement string reads `$'`, `$&` and `` $` `` as patterns,
  // and the label is the user's --url, which could splice the template's own text into the page.
  const html = template
    .replace('<!--IMPORT_MAP-->', () => `<script type="importmap">${importMap}</script>`)
    .replaceAll('%API_LABEL%', () => escapeHtml(options.apiLabel));
  // The import map is the page's one inline script: allowed by its hash, nothing else inline runs.
  const importMapHash = createHash('sha256').update(importMap).digest('base64');
  const contentSecurityPolicy = [
    "default-src 'none'",
    `script-src 'self' 'sha256-${importMapHash}'`,
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return { html, contentSecurityPolicy };
}

function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}
