/**
 * FLOPs and bytes per execution for every op of a trace: from the trace's own stats where it carries
 * them (TPU `flops` / `bytes_accessed`, `model_flops` in JSON), else from the HLO modules an XSpace
 * stores (GPU and CPU profiles), costed by cost.ts. Modules are decoded one at a time and dropped.
 */

import type { OpInfo, TraceCollector } from './collect.js';
import { instructionCost } from './cost.js';
import type { CustomCallKind } from './ops.js';
import { decodeHloProto } from './readers/hlo-proto.js';
import type { TraceSource } from './readers/model.js';
import { WireError } from './readers/wire.js';
import { XplaneSource } from './readers/xplane.js';
import { XplaneHostsSource } from './readers/xplane-hosts.js';

export interface OpCostInfo {
  flops: number | undefined;
  bytes: number | undefined;
  dtype: string | undefined;
  source: 'trace' | 'hlo';
  customCall: CustomCallKind | undefined;
}

export interface OpCosts {
  byOp: Map<OpInfo, OpCostInfo>;
  /** Problems found on the way (an undecodable module); one line each. */
  warnings: string[];
  /** Programs whose HLO was read. */
  modulesRead: number;
}

/** Costs for the ops of `where` in `c`. */
export async function opCosts(
  source: TraceSource,
  c: TraceCollector,
  where: 'device' | 'host',
): Promise<OpCosts> {
  const byOp = new Map<OpInfo, OpCostInfo>();
  const warnings: string[] = [];
  const needHlo = new Map<string, OpInfo[]>();
  for (const ops of c.opsByProgram.values()) {
    for (const op of ops.values()) {
      if (op.where !== where) continue;
      if (op.flops !== undefined || op.bytes !== undefined) {
        byOp.set(op, {
          // XLA has no cost model for custom calls and writes 0 FLOPs for them: unknown, not zero.
          flops: op.customCall && op.flops === 0 ? undefined : op.flops,
          bytes: op.bytes,
          dtype: undefined,
          source: 'trace',
          customCall: undefined,
        });
      } else if (op.programId !== undefined) {
        let list = needHlo.get(op.programId);
        if (list === undefined) {
          list = [];
          needHlo.set(op.programId, list);
        }
        list.push(op);
      }
    }
  }
  if (needHlo.size === 0 || !(source instanceof XplaneSource || source instanceof XplaneHostsSource))
    return { byOp, warnings, modulesRead: 0 };
  const { modules, skipped } = await source.hloProtos(new Set(needHlo.keys()));
  if (skipped.length > 0)
    warnings.push(`HLO modules too large to read for FLOPs: ${skipped.slice(0, 3).join(', ')}`);
  for (const [programId, blob] of modules) {
    let module: ReturnType<typeof decodeHloProto>;
    try {
      module = decodeHloProto(blob.bytes);
    } catch (err) {
      if (!(err instanceof WireError)) throw err;
      warnings.push(`the HLO of ${blob.name} does not decode (${err.message}): its ops have no FLOPs`);
      continue;
    }
    for (const op of needHlo.get(programId) ?? []) {
      const inst = module.byName.get(op.name);
      if (inst === undefined) continue;
      const cost = instructionCost(module, inst);
      byOp.set(op, {
        flops: cost.flops,
        bytes: cost.bytes,
        dtype: cost.dtype,
        source: 'hlo',
        customCall: cost.customCall,
      });
    }
  }
  return { byOp, warnings, modulesRead: modules.size };
}
