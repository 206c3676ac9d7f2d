/** What the HTTP door tells of each answered request (metrics); the composition root supplies the listener. */

export interface HttpObserver {
  /**
   * Called once per answered request, on the request path: keep it to counter increments.
   * `route` is a route template (`/flows/:tenant/:name/run`), never the path itself, so its values
   * are as few as the routes; `unmatched` for a request no route took.
   */
  answered(route: string, status: number, seconds: number): void;
}

/** The exposition of the metrics (`GET /metrics`), rendered at scrape time. */
export interface MetricsExposition {
  render(): Promise<{ contentType: string; body: string }>;
}

export const RUN_ROUTE = '/flows/:tenant/:name/run';
export const ENQUEUE_ROUTE = '/flows/:tenant/:name/enqueue';
