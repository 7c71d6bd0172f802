/**
 * The lines of a watch response (JSON lines, one event each; Kubernetes API concepts, "Efficient
 * detection of changes") as its chunks arrive. Only each chunk is searched for newlines; the pieces of
 * an unfinished line are kept as they came and joined once, when its newline arrives, so a large object
 * sent in many chunks is copied once, not once per chunk.
 */
export class LineSplitter {
  private pieces: string[] = [];

  /** The lines the chunk completes, without their '\n'. */
  push(chunk: string): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let nl = chunk.indexOf('\n'); nl !== -1; nl = chunk.indexOf('\n', start)) {
      const piece = chunk.slice(start, nl);
      if (this.pieces.length > 0) {
        this.pieces.push(piece);
        lines.push(this.pieces.join(''));
        this.pieces = [];
      } else lines.push(piece);
      start = nl + 1;
    }
    if (start < chunk.length) this.pieces.push(start === 0 ? chunk : chunk.slice(start));
    return lines;
  }

  /**
   * At the end of the response: the last line when no '\n' followed it (JSON lines allow the last
   * one unterminated), once.
   */
  end(): string | undefined {
    const rest = this.pieces.join('');
    this.pieces = [];
    return rest === '' ? undefined : rest;
  }
}
