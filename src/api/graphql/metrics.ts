import { getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { HttpLabels, Metrics } from '../../core/metrics.js';

/** Names the GraphQL operation of a request in its metrics labels (REST routes run named operations too). */
export function operationLabels(metrics: Metrics): Plugin {
  const label = ({ args }: { args: { document: Parameters<typeof getOperationAST>[0]; operationName?: string | null; contextValue: unknown } }) => {
    const labels = (args.contextValue as { labels?: HttpLabels }).labels;
    if (labels) labels.operation = metrics.operation(getOperationAST(args.document, args.operationName)?.name?.value);
  };
  return { onExecute: label, onSubscribe: label };
}
