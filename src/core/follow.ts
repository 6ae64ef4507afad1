import { CHANNEL, type Change } from './changes.js';
import { applyNetworkOverrides } from './networks.js';
import type { Runtime } from './runtime.js';
import { forgetSigner } from './signers.js';
import { forgetApiKeys } from './access/keys.js';
import { forgetRelayers } from './relayers/service.js';

/** Follows the others' changes (PostgreSQL only: the embedded database has one instance). */
export function followChanges(rt: Runtime) {
  return rt.db.listen?.(
    CHANNEL,
    (payload) => void apply(rt, payload).catch((err) => rt.log.warn({ err }, 'a change could not be applied')),
    (err) => rt.log.warn({ reason: err.message }, 'change notices: connection lost; connecting again'),
  );
}

async function apply(rt: Runtime, payload: string) {
  if (!payload) {
    // Reconnected: notices may have been missed; take again what cannot have changed unseen otherwise.
    await applyNetworkOverrides(rt);
    forgetRelayers(rt);
    forgetApiKeys(rt);
    return;
  }
  const change = JSON.parse(payload) as Change;
  if (change.kind === 'signer') forgetSigner(rt, change.id);
  else if (change.kind === 'network') await applyNetworkOverrides(rt, change.id);
  else if (change.kind === 'api_key') forgetApiKeys(rt);
  else forgetRelayers(rt, change.id);
}
