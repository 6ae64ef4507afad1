import {
  RestApiKeyPermissionsDocument,
  RestCreateApiKeyDocument,
  RestDeleteApiKeyDocument,
  RestListApiKeysDocument,
  type RestApiKeyFragment,
} from '../../generated/graphql.js';
import { z } from 'zod';
import { createInput } from '../../core/access/keys.js';
import { paging, snakeShape } from './fields.js';
import { paginationRecord, type JsonSchema } from './records.js';
import { type Route, route } from './route.js';

// The reference's /api/v1/api-keys routes and records; here the permissions are enforced
// (docs/api-keys.md).

const keyId = { api_key_id: { gql: 'id', description: "The API key's id." } };

const keyRecord = (k: Omit<RestApiKeyFragment, '__typename'>) => ({
  id: k.id,
  name: k.name,
  permissions: k.permissions,
  allowed_origins: k.allowedOrigins,
  created_at: k.createdAt,
});

export function apiKeyRoutes(): Route[] {
  return [
    route({
      id: 'listApiKeys',
      method: 'GET',
      path: '/api/v1/api-keys',
      tag: 'API keys',
      summary: 'List API keys',
      description: 'The keys this key may read (never their values).',
      document: RestListApiKeysDocument,
      field: { type: 'Query', name: 'apiKeys' },
      pathParams: {},
      query: paging,
      status: 200,
      response: { schema: 'ApiKey', list: true },
      errors: [],
      result: (d) => ({ data: d.apiKeys.items.map(keyRecord), pagination: paginationRecord(d.apiKeys.pagination) }),
    }),
    route({
      id: 'createApiKey',
      method: 'POST',
      path: '/api/v1/api-keys',
      tag: 'API keys',
      summary: 'Create an API key',
      description: 'Answers the key in `value`, this once only: only its digest is stored. A key may give only permissions it holds itself (403 otherwise).',
      document: RestCreateApiKeyDocument,
      field: { type: 'Mutation', name: 'createApiKey' },
      pathParams: {},
      body: {
        variable: 'input',
        description: 'The key: a name, its permissions and the origins browsers may use it from.',
        schema: z.strictObject(snakeShape(createInput.shape)),
        example: { name: 'backend', permissions: ['relayer:all:execute'], allowed_origins: ['*'] },
      },
      status: 201,
      response: { schema: 'ApiKeyCreated', list: false },
      errors: [],
      result: (d) => ({ data: { ...keyRecord(d.createApiKey), value: d.createApiKey.value } }),
    }),
    route({
      id: 'getApiKeyPermissions',
      method: 'GET',
      path: '/api/v1/api-keys/{api_key_id}/permissions',
      tag: 'API keys',
      summary: "An API key's permissions",
      document: RestApiKeyPermissionsDocument,
      field: { type: 'Query', name: 'apiKeyPermissions' },
      pathParams: keyId,
      status: 200,
      response: { schema: 'Permissions', list: false },
      errors: [404],
      result: (d) => ({ data: d.apiKeyPermissions }),
    }),
    route({
      id: 'deleteApiKey',
      method: 'DELETE',
      path: '/api/v1/api-keys/{api_key_id}',
      tag: 'API keys',
      summary: 'Delete an API key',
      description: 'Refused from then on, on every instance. Answers the id.',
      document: RestDeleteApiKeyDocument,
      field: { type: 'Mutation', name: 'deleteApiKey' },
      pathParams: keyId,
      status: 200,
      response: { schema: 'string', list: false },
      errors: [404],
      result: (d) => ({ data: d.deleteApiKey }),
    }),
  ];
}

const strings = { type: 'array', items: { type: 'string' } };
const apiKey: JsonSchema = {
  type: 'object',
  required: ['id', 'name', 'permissions', 'allowed_origins', 'created_at'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    permissions: { ...strings, description: '<resource>:<id or all>:<action> (docs/api-keys.md).' },
    allowed_origins: strings,
    created_at: { type: 'string', format: 'date-time' },
  },
};

export const apiKeySchemas: Record<string, JsonSchema> = {
  ApiKey: apiKey,
  ApiKeyCreated: {
    ...apiKey,
    description: 'A new key; `value` is the key itself, shown this once only.',
    required: [...(apiKey.required as string[]), 'value'],
    properties: { ...(apiKey.properties as object), value: { type: 'string' } },
  },
  Permissions: strings,
};
