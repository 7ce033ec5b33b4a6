// The extractors are imported when first used: together they hold ~240 MB that an API or worker
// which never reads a PDF, DOCX or HTML body should not pay for at start-up (issue 17, memory).

/** Content types whose text is extracted (docs/knowledge.md). */
const TEXT_TYPES = [
  'text/plain',
  'text/markdown',
  'text/html',
  'text/csv',
  'application/json',
  'application/pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
] as const;

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** True when the bytes read as UTF-8 text (no NUL, valid sequences). */
function looksLikeText(b: Buffer): boolean {
  if (b.includes(0)) return false;
  // A multi-byte sequence cut at the end of a head sample is not an error.
  const sample = b.length > 64 ? b.subarray(0, b.length - 4) : b;
  return !new TextDecoder('utf-8', { fatal: false }).decode(sample).includes('\uFFFD');
}

/**
 * The content type from the bytes, never from what the client declared: binary formats by their
 * signature (file-type), text by being valid UTF-8, and among text only HTML is told apart by
 * its markup; the declared type or file name may then say markdown, CSV or JSON (all read as
 * text). Anything else is application/octet-stream (stored, not extracted).
 */
export async function sniffContentType(head: Buffer, hint: { declared?: string; name?: string } = {}): Promise<string> {
  const { fileTypeFromBuffer } = await import('file-type');
  // A head file-type cannot parse (too short, malformed) has no signature: the text checks below decide.
  const ft = await fileTypeFromBuffer(head).catch(() => undefined);
  if (ft) {
    // A zip whose first entries name a Word document is one (file-type needs more than the head for some writers).
    if (ft.mime === 'application/zip' && head.includes(Buffer.from('word/'))) return DOCX;
    return ft.mime;
  }
  if (!looksLikeText(head)) return 'application/octet-stream';
  const start = head.subarray(0, 512).toString('utf8').trimStart().toLowerCase();
  if (
    start.startsWith('<!doctype html') ||
    start.startsWith('<html') ||
    /^<(head|body|div|p|h1|table)[\s>]/.test(start)
  )
    return 'text/html';
  const name = (hint.name ?? '').toLowerCase();
  const declared = (hint.declared ?? '').split(';')[0].trim().toLowerCase();
  if (declared === 'text/markdown' || /\.(md|markdown)$/.test(name)) return 'text/markdown';
  if (declared === 'text/csv' || name.endsWith('.csv')) return 'text/csv';
  if (declared === 'application/json' || name.endsWith('.json')) return 'application/json';
  return 'text/plain';
}

export const isExtractable = (contentType: string): boolean => (TEXT_TYPES as readonly string[]).includes(contentType);

/** The text of a body of a sniffed type; throws for types with no extractor. */
export async function extractText(body: Buffer, contentType: string): Promise<string> {
  switch (contentType) {
    case 'text/plain':
    case 'text/markdown':
    case 'text/csv':
    case 'application/json':
      return body.toString('utf8');
    case 'text/html':
      const { convert: htmlToText } = await import('html-to-text');
      return htmlToText(body.toString('utf8'), {
        wordwrap: false,
        selectors: [
          { selector: 'a', options: { ignoreHref: true } },
          { selector: 'img', format: 'skip' },
        ],
      });
    case 'application/pdf': {
      const { PDFParse } = await import('pdf-parse');
      const parser = new PDFParse({ data: new Uint8Array(body) });
      try {
        const out = await parser.getText();
        return out.text;
      } finally {
        await parser.destroy();
      }
    }
    case DOCX:
      const { default: mammoth } = await import('mammoth');
      return (await mammoth.extractRawText({ buffer: body })).value;
    default:
      throw new Error(`no text extractor for ${contentType}`);
  }
}
