// The two-aggregator tasks of a test device, each task's `report` spied on: `spiedTasks(spec, texts)` loads the DAP
// entry, reads every task file text ({metric: text}) and returns `{ twoAggregator, made }`, the client's option and
// the Prio3 measurements each metric's reports were made of (the randomized ones too), filled as reports are made.
import { dapTask, loadDap, twoAggregatorMetrics } from "../dist/dap/index.js";

export async function spiedTasks(spec, texts) {
  await loadDap();
  const made = {};
  const tasks = {};
  for (const [metric, text] of Object.entries(texts)) {
    const task = dapTask(text);
    tasks[metric] = { ...task, report: (m, time) => ((made[metric] ??= []).push(m), task.report(m, time)) };
  }
  return { twoAggregator: twoAggregatorMetrics(spec, tasks), made };
}
