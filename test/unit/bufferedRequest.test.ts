import { HttpRequest, HttpRequestInit } from '@azure/functions';
import { describe, expect, it } from 'vitest';
import { BufferedRequest } from '../../shared/local/bufferedRequest';

const url = 'http://127.0.0.1:7071/api/clusters/member1/status?dryRun=true';
const wrapped = (method: string, body?: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  new HttpRequest({
    method,
    url,
    query: { dryRun: 'true' },
    params: { name: 'member1' },
    nativeRequest: new BufferedRequest(url, method, headers, body === undefined ? undefined : Buffer.from(body)) as unknown as Request,
  } as HttpRequestInit);

describe('the local host request over a body already read', () => {
  it('is what @azure/functions HttpRequest reads from: url, method, headers, query, params and body', async () => {
    const request = wrapped('POST', '{"conditions":[]}', { 'content-type': 'application/json', 'x-failover-timestamp': '17' });
    expect(request.url).toBe(url);
    expect(request.method).toBe('POST');
    expect(request.headers.get('X-Failover-Timestamp')).toBe('17');
    expect(request.query.get('dryRun')).toBe('true');
    expect(request.params).toEqual({ name: 'member1' });
    expect(request.bodyUsed).toBe(false);
    expect(new TextDecoder().decode(await request.arrayBuffer())).toBe('{"conditions":[]}');
    expect(request.bodyUsed).toBe(true);
  });

  it('answers each read as a fetch Request does', async () => {
    const body = '\uFEFF{"a":"ü"}';
    const cases: Array<{
      read: string;
      of: (r: { text(): Promise<string>; json(): Promise<unknown>; arrayBuffer(): Promise<ArrayBuffer> }) => Promise<unknown>;
    }> = [
      { read: 'text', of: (r) => r.text() },
      { read: 'json', of: (r) => r.json() },
      { read: 'arrayBuffer', of: async (r) => [...new Uint8Array(await r.arrayBuffer())] },
    ];
    for (const { read, of } of cases) {
      const ours = new BufferedRequest(url, 'POST', {}, Buffer.from(body));
      const fetchs = new Request(url, { method: 'POST', body: Buffer.from(body) });
      expect(await of(ours), read).toEqual(await of(fetchs));
    }
  });

  it('gives its body once: a second read fails, as a Request does', async () => {
    for (const second of ['text', 'arrayBuffer', 'json', 'blob', 'formData', 'clone'] as const) {
      const request = new BufferedRequest(url, 'POST', {}, Buffer.from('{}'));
      await request.arrayBuffer();
      await expect(
        Promise.resolve().then(() => request[second]()),
        second,
      ).rejects.toThrow(TypeError);
    }
  });

  it('reads as a stream, a blob or a form through a real Request, and then not as bytes', async () => {
    const form = new BufferedRequest(url, 'POST', { 'content-type': 'application/x-www-form-urlencoded' }, Buffer.from('a=1&b=2'));
    expect(Object.fromEntries((await form.formData()).entries())).toEqual({ a: '1', b: '2' });
    await expect(form.arrayBuffer()).rejects.toThrow(TypeError);

    const streamed = new BufferedRequest(url, 'POST', {}, Buffer.from('chunk'));
    expect(await new Response(streamed.body).text()).toBe('chunk');
    expect(streamed.bodyUsed).toBe(true);
    await expect(streamed.text()).rejects.toThrow(TypeError);

    expect(await (await new BufferedRequest(url, 'POST', {}, Buffer.from('blob')).blob()).text()).toBe('blob');
  });

  it('has an empty body for a GET', async () => {
    const request = wrapped('GET');
    expect(request.body).toBeNull();
    expect((await request.arrayBuffer()).byteLength).toBe(0);
  });
});
