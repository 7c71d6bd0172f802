/**
 * At most `limit` tasks of one limiter run at once; the others wait their turn in the order they
 * came. An infinite limit runs every task at once.
 */
export class Limiter {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  readonly limit: number;

  constructor(limit: number) {
    if (!(limit >= 1)) throw new RangeError(`a limiter's limit must be at least 1 (got ${limit})`);
    this.limit = limit;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await task();
    } finally {
      // The slot passes to the next waiting task, or is given back.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  /** Tasks running now. */
  get active(): number {
    return this.running;
  }
}
