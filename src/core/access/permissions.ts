// API-key permissions: `<resource>:<id>:<action>` strings. Pure: parsing, matching and the list
// filters; the routes and fields that need each are in the schema (src/api/graphql/access.ts).

export const RESOURCES = ['relayer', 'notification', 'signer', 'network', 'api_key', 'plugin'] as const;
/** Each action includes the ones before it: a key that may manage a relayer may also send through it and read it. */
export const ACTIONS = ['read', 'execute', 'manage'] as const;

export type Resource = (typeof RESOURCES)[number];
export type Action = (typeof ACTIONS)[number];

/** One parsed permission. `id` is `*` (all), an exact id, or a prefix ending in `*`. */
export interface Grant {
  resource: Resource | '*';
  id: string;
  action: Action | '*';
}

const rank = (action: Action | '*') => (action === '*' ? ACTIONS.length : ACTIONS.indexOf(action) + 1);

// The id may hold colons (network ids do); the resource and the action never do.
function split(text: string): [string, string, string] | null {
  const first = text.indexOf(':');
  const last = text.lastIndexOf(':');
  if (first < 1 || last === first || last === text.length - 1) return null;
  return [text.slice(0, first), text.slice(first + 1, last), text.slice(last + 1)];
}

const ID = /^[^\s*]{1,128}\*?$/;

/** Every permission string, as one pattern (the API's document states it): what parsePermission takes. */
export const PERMISSION = new RegExp(`^(?:${[...RESOURCES, '\\*'].join('|')}):(?:all|\\*|${ID.source.slice(1, -1)}):(?:${[...ACTIONS, '\\*'].join('|')})$`);

/** A permission string parsed, or why it is not one. */
export function parsePermission(text: string): Grant | string {
  if (!PERMISSION.test(text)) return whyNot(text);
  const [resource, id, action] = split(text)!;
  return { resource: resource as Grant['resource'], id: id === 'all' ? '*' : id, action: action as Grant['action'] };
}

function whyNot(text: string): string {
  const parts = split(text);
  if (!parts) return 'must be <resource>:<id or all>:<action>';
  const [resource, , action] = parts;
  if (resource !== '*' && !(RESOURCES as readonly string[]).includes(resource)) return `unknown resource "${resource}" (one of ${RESOURCES.join(', ')} or *)`;
  if (action !== '*' && !(ACTIONS as readonly string[]).includes(action)) return `unknown action "${action}" (one of ${ACTIONS.join(', ')} or *)`;
  return 'the id must be all, *, an id, or a prefix ending in * (no spaces)';
}

/** The grants of valid permission strings (stored keys hold only valid ones). */
export const grantsOf = (permissions: readonly string[]): Grant[] => permissions.map(parsePermission).filter((g): g is Grant => typeof g !== 'string');

const idMatches = (pattern: string, id: string) => (pattern.endsWith('*') ? id.startsWith(pattern.slice(0, -1)) : pattern === id);

/** Whether `grants` allow `action` on the `resource` named `id`. */
export function allows(grants: readonly Grant[], resource: Resource, id: string, action: Action): boolean {
  return grants.some((g) => (g.resource === '*' || g.resource === resource) && rank(g.action) >= rank(action) && idMatches(g.id, id));
}

/** A need as one string, `<resource>:<id>:<action>` (the permission it takes, with the id spelt out). */
export const need = (resource: Resource, id: string, action: Action) => `${resource}:${id}:${action}`;

/** Whether `grants` allow a need made by `need()`. */
export function allowsNeed(grants: readonly Grant[], text: string): boolean {
  const parts = split(text);
  return !!parts && allows(grants, parts[0] as Resource, parts[1], parts[2] as Action);
}

/**
 * Whether `grants` cover all of `grant`: a key may give a new key only what it has itself (a key
 * that manages keys cannot make one that opens more than it does).
 */
export function covers(grants: readonly Grant[], grant: Grant): boolean {
  return grants.some(
    (g) =>
      (g.resource === '*' || g.resource === grant.resource) &&
      rank(g.action) >= rank(grant.action) &&
      (g.id === '*' || g.id === grant.id || (g.id.endsWith('*') && grant.id.startsWith(g.id.slice(0, -1)))),
  );
}

/** Which ids of `resource` a list shows: all, or those named and those starting with a prefix. */
export type Visible = 'all' | { ids: string[]; prefixes: string[] };

export function visible(grants: readonly Grant[], resource: Resource, action: Action = 'read'): Visible {
  const ids: string[] = [];
  const prefixes: string[] = [];
  for (const g of grants) {
    if ((g.resource !== '*' && g.resource !== resource) || rank(g.action) < rank(action)) continue;
    if (g.id === '*') return 'all';
    if (g.id.endsWith('*')) prefixes.push(g.id.slice(0, -1));
    else ids.push(g.id);
  }
  return { ids, prefixes };
}

/** A Prisma `where` on `id` for what `visible` lets a list show (undefined: everything). */
export function visibleWhere(v: Visible): { OR: ({ id: { in: string[] } } | { id: { startsWith: string } })[] } | undefined {
  if (v === 'all') return undefined;
  return { OR: [{ id: { in: v.ids } }, ...v.prefixes.map((p) => ({ id: { startsWith: p } }))] };
}

/** The same as a test of one id, for lists kept in memory. */
export const visibleTest = (v: Visible) => (id: string) => v === 'all' || v.ids.includes(id) || v.prefixes.some((p) => id.startsWith(p));
