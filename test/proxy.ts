// A TCP proxy in front of PostgreSQL that a test can cut (every connection reset, new ones refused) and open
// again: a store outage without touching the server that other tests share.
import net from 'node:net';

export class CuttableProxy {
  private readonly sockets = new Set<net.Socket>();
  private server: net.Server | null = null;
  port = 0;
  /** Connections accepted since the proxy was made. */
  accepted = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async open(port = 0): Promise<void> {
    const server = net.createServer((client) => {
      this.accepted++;
      const upstream = net.connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.server = server;
    this.port = (server.address() as net.AddressInfo).port;
  }

  /** Every connection reset at once, and nobody listening until `open` again. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    const closed = new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    for (const s of this.sockets) s.resetAndDestroy();
    await closed;
  }
}
