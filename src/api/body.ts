// The request-body rules both surfaces share: JSON only, and no more than the configured size.

/** application/json or any application/*+json, with parameters (charset) or not. */
export function isJsonContentType(value: string | null): boolean {
  if (!value) return false;
  const type = value.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9!#$&^_.-]+\+json$/.test(type);
}

/** A body whose bytes are not UTF-8; `text` is it decoded with U+FFFD for each bad sequence, to name the fields. */
export class InvalidUtf8 extends Error {
  constructor(readonly text: string) {
    super('the body is not valid UTF-8');
  }
}

// Fatal: bytes that are not UTF-8 are refused, never replaced (the value stored would not be the one
// sent). ignoreBOM keeps a leading BOM in the text, so the JSON parser refuses it as it always has.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decode(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new InvalidUtf8(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  }
}

export class BodyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the body is larger than ${limit} bytes`);
  }
}

/**
 * The body as UTF-8 text, read no further than `limit` bytes (a Content-Length above it is refused
 * before reading): throws BodyTooLarge, or InvalidUtf8 for bytes that are not UTF-8.
 */
export async function readBodyText(request: Request, limit: number): Promise<string> {
  const length = request.headers.get('content-length');
  const declared = Number(length ?? 0);
  if (declared > limit) throw new BodyTooLarge(limit);
  // A declared length is what node's HTTP parser reads, no more: the body can be taken whole
  // (without request.body, which builds a stream).
  if (length !== null) {
    const bytes = Buffer.from(await request.arrayBuffer());
    if (bytes.byteLength > limit) throw new BodyTooLarge(limit);
    return decode(bytes);
  }
  if (!request.body) return '';
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new BodyTooLarge(limit);
    }
    chunks.push(value);
  }
  return decode(Buffer.concat(chunks));
}
