// The service as OpenZeppelin Relayer's own TypeScript client (@openzeppelin/relayer-sdk) sees it:
// served on a port, called through the client's API classes.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServerAdapter } from '@whatwg-node/server';
import { Configuration, NotificationsApi, PluginsApi, RelayersApi } from '@openzeppelin/relayer-sdk';
import { expect } from 'vitest';
import type { TestService } from './service.js';

export interface Client {
  url: string;
  relayers: RelayersApi;
  notifications: NotificationsApi;
  plugins: PluginsApi;
  close(): Promise<void>;
}

/** Serves `svc` on a free port and builds the SDK's clients for it (with `token`, default the service's key). */
export async function sdkClient(svc: TestService, token: string = svc.apiKey): Promise<Client> {
  const server = createServer(createServerAdapter((request: Request) => svc.app.fetch(request)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = new Configuration({ basePath: url, accessToken: token });
  return {
    url,
    relayers: new RelayersApi(config),
    notifications: new NotificationsApi(config),
    plugins: new PluginsApi(config),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The HTTP status and envelope of a call the SDK rejects (axios throws on 4xx and 5xx). */
export async function sdkError(
  call: Promise<unknown>,
  label = '',
): Promise<{ status: number; body: { success: boolean; data: null; error: string; message: string } }> {
  try {
    await call;
  } catch (e) {
    const response = (e as { response?: { status: number; data: any } }).response;
    if (!response) throw e;
    expect(response.data).toMatchObject({ success: false, data: null, metadata: { logs: [], traces: [] } });
    return { status: response.status, body: response.data };
  }
  throw new Error(`the call succeeded${label ? ` (${label})` : ''}`);
}
