/**
 * The body-bearing part of a fetch `Request` over a body the host has already read whole. @azure/functions'
 * HttpRequest wraps a native Request; building one (and its body stream) for every call costs more than
 * many a handler, so the reads the functions make (arrayBuffer, text, json, headers, url, method) are
 * answered from the buffer, and the rest (body as a stream, blob, formData, clone) from a real Request made
 * on first use.
 */
export class BufferedRequest {
  readonly headers: Headers;
  private used = false;
  private full?: Request;

  constructor(
    readonly url: string,
    readonly method: string,
    headers: Record<string, string>,
    private readonly bytes: Buffer | undefined,
  ) {
    this.headers = new Headers(headers);
  }

  get bodyUsed(): boolean {
    return this.used || (this.full?.bodyUsed ?? false);
  }

  get body(): ReadableStream<Uint8Array> | null {
    return this.real().body;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    if (this.full) return this.full.arrayBuffer();
    const bytes = this.take();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  async text(): Promise<string> {
    if (this.full) return this.full.text();
    return new TextDecoder().decode(this.take());
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  blob(): Promise<Blob> {
    return this.real().blob();
  }

  formData(): Promise<FormData> {
    return this.real().formData();
  }

  clone(): Request {
    return this.real().clone();
  }

  /** The body, once: a second read fails as a Request's does (no body is never used up). */
  private take(): Uint8Array {
    if (!this.bytes) return new Uint8Array(0);
    if (this.used) throw new TypeError('Body is unusable: Body has already been read');
    this.used = true;
    return this.bytes;
  }

  private real(): Request {
    if (!this.full) {
      this.full = new Request(this.url, { method: this.method, headers: this.headers, body: this.bytes });
      // A body already given out is used up in the real one too: it then refuses reads and clones as a used Request does.
      if (this.used) void this.full.arrayBuffer();
    }
    return this.full;
  }
}
