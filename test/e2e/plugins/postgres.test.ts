import { postgresReachable } from '../../support/postgres.js';
import { pluginSuite } from './suite.js';

pluginSuite('postgres', await postgresReachable());
