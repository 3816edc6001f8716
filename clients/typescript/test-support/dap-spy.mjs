// The two-aggregator tasks of a test device, each task's `report` spied on: `spiedTasks(spec, texts)` loads the DAP
// entry, reads every task file text ({metric: text}) and returns `{ twoAggregator, made }`, the client's option and
// what each metric's reports were made of, filled as reports are made: the Prio3 measurements (the randomized ones
// too), and a `poplar1` metric's packed strings in hex (its bits/8 bytes, NUL-padded).
import { dapTask, loadDap, poplar1Task, twoAggregatorMetrics } from "../dist/dap/index.js";

export async function spiedTasks(spec, texts) {
  await loadDap();
  const made = {};
  const tasks = {};
  for (const [metric, text] of Object.entries(texts)) {
    const seen = (m) => (made[metric] ??= []).push(m);
    if (spec.metric(metric).params.protocol === "poplar1") {
      const task = poplar1Task(text);
      tasks[metric] = { ...task, report: (packed, time) => (seen(Buffer.from(packed).toString("hex")), task.report(packed, time)) };
    } else {
      const task = dapTask(text);
      tasks[metric] = { ...task, report: (m, time) => (seen(m), task.report(m, time)) };
    }
  }
  return { twoAggregator: twoAggregatorMetrics(spec, tasks), made };
}
