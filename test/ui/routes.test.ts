import { describe, expect, it } from 'vitest';
import { createHttpApi } from '../../shared/http/api.js';
import { WEB_VIEW_PAGE } from '../../shared/ui/page.js';

const get = (path: string) => ({ method: 'GET', path, query: {}, body: undefined });

describe('the web view routes', () => {
  it('serve the page and its data only where the server offers a view', async () => {
    const withView = createHttpApi({
      healthy: async () => true,
      webView: {
        page: WEB_VIEW_PAGE,
        state: async () => ({ cluster: 'c', at: 1, ranges: [], pools: [], hostPorts: [] }),
      },
    });
    const page = await withView(get('/ui'));
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toContain('<title>berth</title>');
    const state = await withView(get('/ui/state'));
    expect(JSON.parse(state.body ?? '')).toEqual({
      cluster: 'c',
      at: 1,
      ranges: [],
      pools: [],
      hostPorts: [],
      // Counted by the HTTP layer from its decisions: none yet.
      allocations: 0,
    });
    // The function URLs in AWS serve no page.
    const withoutView = createHttpApi({ healthy: async () => true });
    expect((await withoutView(get('/ui'))).statusCode).toBe(404);
    expect((await withoutView(get('/ui/state'))).statusCode).toBe(404);
  });

  it('let the page load nothing but itself: no external script, style or request', async () => {
    const api = createHttpApi({
      healthy: async () => true,
      webView: { page: WEB_VIEW_PAGE, state: async () => ({}) },
    });
    const page = await api(get('/ui'));
    const policy = page.headers['content-security-policy'] ?? '';
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy).toMatch(/script-src 'sha256-[A-Za-z0-9+/]+=*'/);
    expect(page.body).not.toMatch(/(src|href)="(https?:)?\/\//);
  });
});
