import { type ControlPlane, EVALUATIONS_PER_MESSAGE, type TaintEvaluationMessage } from '../ports';

/**
 * Queues an immediate re-evaluation of `clusters`: one message per EVALUATIONS_PER_MESSAGE of them (a
 * relist of a thousand clusters costs ten sends, not a thousand).
 */
export async function requestEvaluations(plane: ControlPlane, clusters: readonly string[], reason: TaintEvaluationMessage['reason']): Promise<void> {
  const names = [...new Set(clusters)];
  const messages: TaintEvaluationMessage[] = [];
  for (let i = 0; i < names.length; i += EVALUATIONS_PER_MESSAGE) {
    const part = names.slice(i, i + EVALUATIONS_PER_MESSAGE);
    messages.push(part.length === 1 ? { cluster: part[0], reason } : { clusters: part, reason });
  }
  await Promise.all(messages.map((message) => plane.evaluations.send(message)));
}

/** The clusters a taint-evaluation message names. */
export const evaluationTargets = (message: TaintEvaluationMessage): string[] => ('clusters' in message ? message.clusters : [message.cluster]);
