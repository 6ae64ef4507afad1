import { connect, type Socket } from 'node:net';

/**
 * One keep-alive HTTP/1.1 connection that posts JSON and reads the answer with as little work as a
 * client can do. A bench's client shares this machine's two cores with the service and the chain,
 * so what it spends is taken from what it measures: node:http's client spent 0.23-0.28 ms of CPU a
 * send in the relaying bench on a slow spell of this machine, this one 0.12-0.15 ms.
 * One request at a time; a connection the server closes fails the request in flight (a send must
 * not be retried blindly).
 */
export class Wire {
  private chunks: Buffer[] = [];
  private size = 0;
  private waiting?: { resolve(r: { status: number; body: string }): void; reject(e: Error): void };

  private constructor(
    private readonly socket: Socket,
    private readonly host: string,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      this.chunks.push(chunk);
      this.size += chunk.length;
      this.parse();
    });
    const fail = (e?: Error) => {
      const w = this.waiting;
      this.waiting = undefined;
      w?.reject(e ?? new Error('connection closed by the server'));
    };
    socket.on('error', fail);
    socket.on('close', () => fail());
  }

  static open(host: string, port: number): Promise<Wire> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port }, () => {
        socket.off('error', reject);
        resolve(new Wire(socket, `${host}:${port}`));
      });
      socket.once('error', reject);
    });
  }

  post(path: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
    if (this.waiting) throw new Error('one request at a time');
    let head = `POST ${path} HTTP/1.1\r\nhost: ${this.host}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`;
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(`${head}\r\n${body}`);
    });
  }

  close() {
    this.socket.destroy();
  }

  /** Settles the request in flight once its whole answer (content-length or chunked) is here. */
  private parse() {
    const buf = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.size);
    this.chunks = [buf];
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return;
    const head = buf.toString('latin1', 0, end).toLowerCase();
    const status = Number(head.slice(9, 12));
    const length = /\r\ncontent-length: *(\d+)/.exec(head);
    let body: string;
    let used: number;
    if (length) {
      used = end + 4 + Number(length[1]);
      if (buf.length < used) return;
      body = buf.toString('utf8', end + 4, used);
    } else if (/\r\ntransfer-encoding: *chunked/.test(head)) {
      const parts: Buffer[] = [];
      let at = end + 4;
      for (;;) {
        const eol = buf.indexOf('\r\n', at);
        if (eol < 0) return;
        const n = Number.parseInt(buf.toString('latin1', at, eol), 16);
        if (buf.length < eol + 2 + n + 2) return;
        parts.push(buf.subarray(eol + 2, eol + 2 + n));
        at = eol + 2 + n + 2;
        if (n === 0) break;
      }
      used = at;
      body = Buffer.concat(parts).toString('utf8');
    } else {
      used = end + 4;
      body = '';
    }
    this.chunks = used < buf.length ? [buf.subarray(used)] : [];
    this.size = buf.length - used;
    const w = this.waiting;
    this.waiting = undefined;
    w?.resolve({ status, body });
  }
}
