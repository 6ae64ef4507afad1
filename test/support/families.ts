// The chain families this service lists (src/chains/list.ts), as the composition root hands them
// out, and what derives from them: for tests that build a part without starting a service.
import { buildSchema } from '../../src/api/graphql/schema.js';
import { restRoutes } from '../../src/api/rest/routes.js';
import { FAMILY_SPECS } from '../../src/chains/list.js';
import { familySpecs } from '../../src/core/registry.js';
import { custodiesOf } from '../../src/signers/custody.js';
import { CUSTODY_TYPES } from '../../src/signers/list.js';

export const families = familySpecs(FAMILY_SPECS);
export const schema = buildSchema(families);
export const custodies = custodiesOf(CUSTODY_TYPES);
export const routes = restRoutes(families, custodies);
