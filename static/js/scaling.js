/* What Node count x Process count change for a training whose Batch size is per process (pure):
 * said where the run settings are chosen, with the usual remedies, so that a 1 x 2 run that
 * trains worse than 1 x 1 on the same data is no surprise. */
import { formatNumber } from './values.js';

/**
 * The note under the run settings of a node (data: its {parameters, run_settings}; module: its
 * declaration, for the defaults), or '' for one process, or for a module without a Batch size
 * and a Learning rate (a component: its script decides what a batch is).
 */
export function scalingNote(data, module) {
  const params = (module && module.params) || [];
  const value = (name) => {
    const given = ((data && data.parameters) || {})[name];
    const declared = params.find((p) => p.name === name);
    return given !== undefined ? given : declared ? declared.default : undefined;
  };
  const batch = value('batch_size');
  const lr = value('learning_rate');
  if (!params.some((p) => p.name === 'batch_size') || !Number.isInteger(batch) || typeof lr !== 'number') return '';
  const settings = (data && data.run_settings) || {};
  const count = (x) => (Number.isInteger(x) && x > 0 ? x : 1);
  const world = count(settings.node_count) * count(settings.process_count_per_node);
  if (world === 1) return '';
  const keep = batch % world === 0 ? `set Batch size to ${batch / world} to keep the global batch of ${batch}`
    : `set Batch size to about ${Math.max(1, Math.round(batch / world))} to keep a global batch near ${batch}`;
  return `${world} processes, each with Batch size ${batch}: a global batch of ${batch * world} images per step, `
    + `and ${world} times fewer steps per epoch than 1 process takes. To train as 1 process does, scale the learning `
    + `rate with the global batch (Learning rate ${formatNumber(lr)} → ${formatNumber(lr * world)}, with a few `
    + `warm-up steps), or ${keep}.`;
}
