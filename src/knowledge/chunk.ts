// Imported when first used (start-up memory, issue 17).

export interface TextChunk {
  index: number;
  text: string;
  tokens: number;
}

/**
 * Splits text into chunks of at most `sizeTokens` tokens (cl100k, gpt-tokenizer) with
 * `overlapTokens` of overlap, on paragraph, line, sentence and word boundaries first
 * (@langchain/textsplitters; Markdown on its headings). Blank chunks are dropped.
 */
export async function chunkText(
  text: string,
  opts: { sizeTokens: number; overlapTokens: number; markdown?: boolean },
): Promise<TextChunk[]> {
  const clean = text
    .replace(/\r\n?/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  if (!clean) return [];
  const [{ MarkdownTextSplitter, RecursiveCharacterTextSplitter }, { countTokens }] = await Promise.all([
    import('@langchain/textsplitters'),
    import('gpt-tokenizer'),
  ]);
  const fields = {
    chunkSize: opts.sizeTokens,
    chunkOverlap: Math.min(opts.overlapTokens, Math.floor(opts.sizeTokens / 2)),
    lengthFunction: (t: string) => countTokens(t),
  };
  const splitter = opts.markdown ? new MarkdownTextSplitter(fields) : new RecursiveCharacterTextSplitter(fields);
  const parts = await splitter.splitText(clean);
  return parts
    .map((t) => t.trim())
    .filter(Boolean)
    .map((t, index) => ({ index, text: t, tokens: countTokens(t) }));
}
